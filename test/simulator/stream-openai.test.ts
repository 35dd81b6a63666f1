import { describe, expect, it } from 'vitest';
import { errorMessage, type Json, post, sharedSimulator, WEATHER_SCHEMA } from './sim-helpers.js';
import { bodyFor, jsonEvents, parseSse, postStream } from './stream-helpers.js';

const sim = sharedSimulator();

interface Chunk {
  id: string;
  object: string;
  model: string;
  choices: Array<{
    index: number;
    delta: {
      role?: string;
      content?: string | null;
      tool_calls?: Array<{ index: number; id?: string; type?: string; function: Json }>;
    };
    logprobs: { content: Json[] | null; refusal: null } | null;
    finish_reason: string | null;
  }>;
  usage?: Json | null;
}

async function chunks(body: Json): Promise<{ text: string; chunks: Chunk[] }> {
  const res = await postStream(
    sim(),
    'openai-compatible',
    'oa',
    bodyFor('openai-compatible', 'Hi there', body),
  );
  expect(res.status).toBe(200);
  return { text: res.text, chunks: jsonEvents(res.text) as unknown as Chunk[] };
}

describe('openai-compatible streaming', () => {
  it('role first, content pieces, an empty-delta chunk with the finish, then [DONE]; one id throughout', async () => {
    const { text, chunks: list } = await chunks({});
    const events = parseSse(text);
    expect(events.at(-1)?.data).toBe('[DONE]');
    expect(new Set(list.map((c) => c.id)).size).toBe(1);
    expect(list.every((c) => c.object === 'chat.completion.chunk' && c.model === 'oa-model')).toBe(true);
    expect(list[0]?.choices[0]).toEqual({
      index: 0,
      delta: { role: 'assistant', content: '', refusal: null },
      logprobs: null,
      finish_reason: null,
    });
    expect(list.at(-1)?.choices[0]).toEqual({ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' });
    const middle = list.slice(1, -1);
    expect(middle).toHaveLength(12);
    expect(middle.every((c) => c.choices[0]?.finish_reason === null && c.choices[0]?.delta.content)).toBe(
      true,
    );
    // Without include_usage no chunk has a usage field at all.
    expect(list.every((c) => !('usage' in c))).toBe(true);
  });

  it('include_usage: usage null on every chunk, then a chunk with no choices and the usage, before [DONE]', async () => {
    const plain = await post(sim(), 'openai-compatible', 'oa', bodyFor('openai-compatible', 'Hi there'));
    const { text, chunks: list } = await chunks({ stream_options: { include_usage: true } });
    const last = list.at(-1) as Chunk;
    expect(last.choices).toEqual([]);
    expect(last.usage).toEqual(plain.body.usage);
    expect(list.slice(0, -1).every((c) => c.usage === null)).toBe(true);
    expect(parseSse(text).at(-1)?.data).toBe('[DONE]');
  });

  it('include_usage false is as if absent', async () => {
    const { chunks: list } = await chunks({ stream_options: { include_usage: false } });
    expect(list.every((c) => !('usage' in c))).toBe(true);
  });

  it('n=2: every chunk carries one choice; each choice assembles to its non-stream text', async () => {
    const plain = await post(
      sim(),
      'openai-compatible',
      'oa',
      bodyFor('openai-compatible', 'Hi there', { n: 2 }),
    );
    const { chunks: list } = await chunks({ n: 2, stream_options: { include_usage: true } });
    const texts = ['', ''];
    const finishes: Array<string | null> = [null, null];
    for (const chunk of list) {
      expect(chunk.choices.length).toBeLessThanOrEqual(1);
      for (const c of chunk.choices) {
        texts[c.index] += c.delta.content ?? '';
        if (c.finish_reason) finishes[c.index] = c.finish_reason;
      }
    }
    const expected = (plain.body.choices as Array<{ message: { content: string } }>).map(
      (c) => c.message.content,
    );
    expect(texts).toEqual(expected);
    expect(texts[1]).toContain('(choice 2)');
    expect(finishes).toEqual(['stop', 'stop']);
    expect(list.at(-1)?.usage).toEqual(plain.body.usage);
  });

  it('logprobs: each content chunk carries its tokens; together they are the non-stream list', async () => {
    const extra = { logprobs: true, top_logprobs: 2 };
    const plain = await post(
      sim(),
      'openai-compatible',
      'oa',
      bodyFor('openai-compatible', 'Hi there', extra),
    );
    const expected = (plain.body.choices as Array<{ logprobs: { content: Json[] } }>)[0]?.logprobs.content;
    const { chunks: list } = await chunks(extra);
    expect(list[0]?.choices[0]?.logprobs).toEqual({ content: [], refusal: null });
    const joined = list.flatMap((c) => c.choices[0]?.logprobs?.content ?? []);
    expect(joined).toEqual(expected);
    // Each token goes with the piece it ends in: the tokens so far are always a prefix of the text so far.
    let tokens = '';
    let content = '';
    for (const chunk of list) {
      const choice = chunk.choices[0];
      content += choice?.delta.content ?? '';
      tokens += (choice?.logprobs?.content ?? []).map((t) => t.token).join('');
      expect(content.startsWith(tokens)).toBe(true);
    }
    expect(tokens).toBe(content);
  });

  it('tool calls: index, id, type and name with the first arguments piece, then arguments only', async () => {
    const { chunks: list } = await chunks({
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: WEATHER_SCHEMA } }],
    });
    expect(list[0]?.choices[0]?.delta).toEqual({ role: 'assistant', content: null, refusal: null });
    const calls = list.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    expect(calls).toHaveLength(12);
    const [first, ...rest] = calls;
    expect(first).toMatchObject({ index: 0, type: 'function', function: { name: 'get_weather' } });
    expect(first?.id).toMatch(/^call_[A-Za-z0-9]{24}$/);
    expect(rest.every((c) => c.id === undefined && c.function.name === undefined && c.index === 0)).toBe(
      true,
    );
    expect(list.at(-1)?.choices[0]?.finish_reason).toBe('tool_calls');
  });

  it('refuses stream_options without stream, and a stream that is not a boolean', async () => {
    const noStream = await post(sim(), 'openai-compatible', 'oa', {
      ...bodyFor('openai-compatible'),
      stream_options: { include_usage: true },
    });
    expect(noStream.status).toBe(400);
    expect(noStream.body.error).toMatchObject({ param: 'stream_options' });
    const bad = await post(sim(), 'openai-compatible', 'oa', {
      ...bodyFor('openai-compatible'),
      stream: 'yes',
    });
    expect(bad.status).toBe(400);
    expect(errorMessage(bad.body)).toContain("'stream'");
    const badOptions = await post(sim(), 'openai-compatible', 'oa', {
      ...bodyFor('openai-compatible'),
      stream: true,
      stream_options: { include_usage: 'yes' },
    });
    expect(badOptions.status).toBe(400);
    expect(errorMessage(badOptions.body)).toContain('include_usage');
    expect(
      (await post(sim(), 'openai-compatible', 'oa', { ...bodyFor('openai-compatible'), stream: false }))
        .status,
    ).toBe(200);
  });
});
