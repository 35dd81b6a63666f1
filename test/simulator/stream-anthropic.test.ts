import { describe, expect, it } from 'vitest';
import { errorMessage, type Json, post, sharedSimulator, WEATHER_SCHEMA } from './sim-helpers.js';
import { bodyFor, parseSse, postStream } from './stream-helpers.js';

const sim = sharedSimulator();

async function events(extra: Json, text = 'Hi there') {
  const body = bodyFor('anthropic', text, extra);
  const plain = await post(sim(), 'anthropic', 'claude', body);
  expect(plain.status, JSON.stringify(plain.body)).toBe(200);
  const res = await postStream(sim(), 'anthropic', 'claude', body);
  expect(res.status).toBe(200);
  const list = parseSse(res.text).map((e) => ({ name: e.event, data: JSON.parse(e.data) as Json }));
  // Every event is named after its type.
  for (const e of list) expect(e.name).toBe(e.data.type);
  return { plain: plain.body, list, types: list.map((e) => e.name) };
}

/** Consecutive repeats collapsed: the shape of the sequence. */
function shape(types: Array<string | null>): string[] {
  return types.filter((t, i) => t !== types[i - 1]) as string[];
}

describe('anthropic streaming', () => {
  it('message_start, one block with a ping after its start, message_delta, message_stop', async () => {
    const { plain, list, types } = await events({ stop_sequences: ['never-there'] });
    expect(shape(types)).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    const start = list[0]?.data.message as Json;
    const usage = plain.usage as Json;
    expect(start).toMatchObject({ type: 'message', role: 'assistant', model: 'claude-test', content: [] });
    expect(start.stop_reason).toBeNull();
    expect(start.usage).toEqual({
      input_tokens: usage.input_tokens,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      output_tokens: 1,
    });
    expect(list[1]?.data).toEqual({
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'text', text: '' },
    });
    const delta = list.find((e) => e.name === 'message_delta')?.data as Json;
    expect(delta).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage,
    });
  });

  it('thinking: thinking_delta pieces and one signature_delta make the non-stream thinking block', async () => {
    const { plain, list } = await events({
      max_tokens: 2048,
      thinking: { type: 'enabled', budget_tokens: 1024 },
    });
    const expected = (plain.content as Json[])[0] as { thinking: string; signature: string };
    expect(list[1]?.data.content_block).toEqual({ type: 'thinking', thinking: '', signature: '' });
    const deltas = list
      .filter((e) => e.name === 'content_block_delta' && e.data.index === 0)
      .map((e) => e.data.delta as Json);
    const thinking = deltas.filter((d) => d.type === 'thinking_delta').map((d) => d.thinking);
    expect(thinking.length).toBeGreaterThan(1);
    expect(thinking.join('')).toBe(expected.thinking);
    expect(deltas.at(-1)).toEqual({ type: 'signature_delta', signature: expected.signature });
    const text = list
      .filter((e) => e.name === 'content_block_delta' && e.data.index === 1)
      .map((e) => (e.data.delta as { text: string }).text)
      .join('');
    expect(text).toBe(((plain.content as Json[])[1] as { text: string }).text);
    expect((list.find((e) => e.name === 'message_delta')?.data as Json).usage).toEqual(plain.usage);
  });

  it('tool use: the lead text block, then a tool_use block whose partial_json pieces make its input', async () => {
    const { plain, list } = await events(
      { tools: [{ name: 'get_weather', input_schema: WEATHER_SCHEMA }] },
      'Weather in Paris?',
    );
    const blocks = plain.content as Json[];
    expect(blocks.map((b) => b.type)).toEqual(['text', 'tool_use']);
    const start = list.find((e) => e.name === 'content_block_start' && e.data.index === 1)?.data
      .content_block as Json;
    expect(start).toMatchObject({ type: 'tool_use', name: 'get_weather', input: {} });
    expect(start.id).toMatch(/^toolu_01[A-Za-z0-9]{22}$/);
    const json = list
      .filter((e) => e.name === 'content_block_delta' && e.data.index === 1)
      .map((e) => {
        const delta = e.data.delta as { type: string; partial_json: string };
        expect(delta.type).toBe('input_json_delta');
        return delta.partial_json;
      })
      .join('');
    expect(JSON.parse(json)).toEqual((blocks[1] as Json).input);
    expect((list.find((e) => e.name === 'message_delta')?.data.delta as Json).stop_reason).toBe('tool_use');
  });

  it('a stop sequence: stop_reason and stop_sequence as in the non-stream answer', async () => {
    const { plain, list } = await events({ stop_sequences: ['reply'] });
    expect(plain.stop_reason).toBe('stop_sequence');
    expect((list.find((e) => e.name === 'message_delta')?.data as Json).delta).toEqual({
      stop_reason: 'stop_sequence',
      stop_sequence: 'reply',
    });
  });

  it('refuses a stream that is not a boolean', async () => {
    const res = await post(sim(), 'anthropic', 'claude', { ...bodyFor('anthropic'), stream: 'yes' });
    expect(res.status).toBe(400);
    expect(errorMessage(res.body)).toContain('stream');
  });
});
