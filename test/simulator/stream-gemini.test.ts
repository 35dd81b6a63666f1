import { describe, expect, it } from 'vitest';
import { AUTH, type Json, post, sharedSimulator, TIME_SCHEMA, WEATHER_SCHEMA } from './sim-helpers.js';
import { assemble, bodyFor, jsonEvents, postStream, streamUrl, summarise } from './stream-helpers.js';

const sim = sharedSimulator();

interface Candidate {
  content: { parts?: Json[]; role: string };
  finishReason?: string;
  index?: number;
  chosen?: unknown;
  logprobsResult?: { chosenCandidates: Json[] };
}
interface Chunk {
  candidates: Candidate[];
  usageMetadata?: Json;
  modelVersion: string;
  responseId: string;
}

async function stream(extra: Json, text = 'Hi there', sse = true) {
  const body = bodyFor('gemini', text, extra);
  const plain = await post(sim(), 'gemini', 'gem', body);
  expect(plain.status, JSON.stringify(plain.body)).toBe(200);
  const res = await postStream(sim(), 'gemini', 'gem', body, { url: streamUrl(sim(), 'gemini', 'gem', sse) });
  expect(res.status).toBe(200);
  return { plain: plain.body, res, chunks: (sse ? jsonEvents(res.text) : JSON.parse(res.text)) as Chunk[] };
}

describe('gemini streaming', () => {
  it('alt=sse: data events with CRLF line ends; text in pieces; the finish and the whole usage on the last', async () => {
    const { plain, res, chunks } = await stream({});
    expect(res.contentType).toBe('text/event-stream');
    expect(res.text.startsWith('data: {')).toBe(true);
    expect(res.text.endsWith('}\r\n\r\n')).toBe(true);
    expect(chunks).toHaveLength(12);
    expect(new Set(chunks.map((c) => c.responseId)).size).toBe(1);
    expect(chunks.every((c) => c.modelVersion === 'gemini-2.5-flash')).toBe(true);
    const usage = plain.usageMetadata as { promptTokenCount: number };
    for (const chunk of chunks.slice(0, -1)) {
      expect(chunk.candidates[0]?.finishReason).toBeUndefined();
      expect(chunk.candidates[0]?.index).toBeUndefined();
      expect(chunk.usageMetadata).toEqual({
        promptTokenCount: usage.promptTokenCount,
        totalTokenCount: usage.promptTokenCount,
      });
    }
    const last = chunks.at(-1) as Chunk;
    expect(last.candidates[0]?.finishReason).toBe('STOP');
    expect(last.usageMetadata).toEqual(plain.usageMetadata);
    expect(assemble('gemini', res.text)).toEqual(summarise('gemini', plain));
  });

  it('function calls: whole, together in one chunk, with the finish', async () => {
    const tools = [
      {
        functionDeclarations: [
          { name: 'get_weather', parametersJsonSchema: WEATHER_SCHEMA },
          { name: 'get_time', parametersJsonSchema: TIME_SCHEMA },
        ],
      },
    ];
    const { plain, chunks } = await stream({ tools }, 'get_weather and get_time for Oslo');
    expect(chunks).toHaveLength(1);
    const candidate = chunks[0]?.candidates[0] as Candidate;
    const expected = (plain.candidates as Candidate[])[0] as Candidate;
    expect(candidate.content.parts).toEqual(expected.content.parts);
    expect(candidate.content.parts?.map((p) => Object.keys(p))).toEqual([['functionCall'], ['functionCall']]);
    expect(candidate.finishReason).toBe('STOP');
    expect(chunks[0]?.usageMetadata).toEqual(plain.usageMetadata);
  });

  it('candidateCount 2: both candidates in each chunk, the index written only for the second', async () => {
    const { plain, chunks } = await stream({ generationConfig: { candidateCount: 2 } });
    const texts = ['', ''];
    for (const chunk of chunks) {
      expect(chunk.candidates).toHaveLength(2);
      expect(chunk.candidates.map((c) => c.index)).toEqual([undefined, 1]);
      chunk.candidates.forEach((c, i) => {
        texts[i] += (c.content.parts ?? []).map((p) => p.text).join('');
      });
    }
    const expected = (plain.candidates as Candidate[]).map((c) =>
      (c.content.parts ?? []).map((p) => p.text).join(''),
    );
    expect(texts).toEqual(expected);
    expect(chunks.at(-1)?.candidates.map((c) => c.finishReason)).toEqual(['STOP', 'STOP']);
  });

  it('includeThoughts: the thought text first, in pieces marked thought', async () => {
    const { plain, chunks } = await stream({
      generationConfig: { thinkingConfig: { thinkingBudget: 512, includeThoughts: true } },
    });
    const parts = chunks.flatMap((c) => c.candidates[0]?.content.parts ?? []);
    const thoughts = parts.filter((p) => p.thought === true);
    expect(thoughts.length).toBeGreaterThan(1);
    expect(thoughts.map((p) => p.text).join('')).toBe('Simulated thinking.');
    expect(parts.findIndex((p) => p.thought !== true)).toBe(thoughts.length);
    expect(chunks.at(-1)?.usageMetadata).toEqual(plain.usageMetadata);
  });

  it('logprobs: each chunk has those of its text; together, the non-stream chosen candidates', async () => {
    const { plain, chunks } = await stream({ generationConfig: { responseLogprobs: true, logprobs: 1 } });
    const expected = ((plain.candidates as Candidate[])[0] as Candidate).logprobsResult?.chosenCandidates;
    const joined = chunks.flatMap((c) => c.candidates[0]?.logprobsResult?.chosenCandidates ?? []);
    expect(joined).toEqual(expected);
    expect(chunks.every((c) => typeof (c.candidates[0] as Json | undefined)?.avgLogprobs === 'number')).toBe(
      true,
    );
  });

  it('without alt=sse: one JSON array of the same chunks', async () => {
    const { plain, res, chunks } = await stream({}, 'Hi there', false);
    expect(res.contentType).toContain('application/json');
    expect(Array.isArray(chunks)).toBe(true);
    expect(chunks).toHaveLength(12);
    expect(assemble('gemini', res.text)).toEqual(summarise('gemini', plain));
  });

  it('refuses an alt it does not speak; generateContent does not stream', async () => {
    const url = `${streamUrl(sim(), 'gemini', 'gem', false)}?alt=proto`;
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...AUTH.gemini },
      body: JSON.stringify(bodyFor('gemini')),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { status: string } }).error.status).toBe('INVALID_ARGUMENT');
    const plain = await post(sim(), 'gemini', 'gem', bodyFor('gemini'));
    expect(plain.status).toBe(200);
    expect(
      sim()
        .requests('gem')
        .map((r) => r.stream),
    ).toEqual([true, false]);
  });
});
