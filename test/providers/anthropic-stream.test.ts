import { describe, expect, it } from 'vitest';
import { anthropicAdapter } from '../../src/providers/anthropic/index.js';
import { chatRequest, providerConfig, TEST_KEY } from './provider-test-helpers.js';
import { feed, fixtureEvents, sse, streamHarness } from './stream-test-helpers.js';

const claude = providerConfig('prov-claude', 'anthropic', 'https://api.anthropic.com', 'claude-sonnet-4-5');
const { parser, deltasOf, choiceOf, errorOf, answer, play, playAgainstAnswer, midStreamError } =
  streamHarness(anthropicAdapter, claude);

const JSON_MODE = chatRequest({ responseFormat: { type: 'json_object' } });

function start(usage: Record<string, unknown> = { input_tokens: 10, output_tokens: 1 }) {
  return sse(
    {
      type: 'message_start',
      message: {
        id: 'msg_1',
        type: 'message',
        role: 'assistant',
        model: 'claude-sonnet-4-5-20250929',
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage,
      },
    },
    'message_start',
  );
}

function blockStart(index: number, block: Record<string, unknown>) {
  return sse({ type: 'content_block_start', index, content_block: block }, 'content_block_start');
}

function blockDelta(index: number, delta: Record<string, unknown>) {
  return sse({ type: 'content_block_delta', index, delta }, 'content_block_delta');
}

function blockStop(index: number) {
  return sse({ type: 'content_block_stop', index }, 'content_block_stop');
}

function messageDelta(
  stopReason: string,
  usage: Record<string, unknown>,
  extra: Record<string, unknown> = {},
) {
  return sse(
    { type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null, ...extra }, usage },
    'message_delta',
  );
}

const STOP = sse({ type: 'message_stop' }, 'message_stop');

describe('anthropic stream: text, thinking and usage', () => {
  it('streams the same text, usage and model as the answer that is not streamed; thinking is not text', () => {
    const { stream, choice, unstreamed } = playAgainstAnswer(
      'anthropic-stream-text.txt',
      'anthropic-message.json',
    );
    expect(choice.text).toBe(unstreamed.choices[0]?.text);
    expect(choice.text).toBe('Hi! My name is Claude. How can I help?');
    expect(choice.text).not.toContain('greets');
    expect(choice.finish).toBe('stop');
    expect(stream.usage()).toEqual(unstreamed.usage);
    // Prompt tokens: input + cache writes + cache reads.
    expect(stream.usage()).toEqual({
      promptTokens: 3195,
      completionTokens: 503,
      cachedPromptTokens: 1000,
      cacheWritePromptTokens: 100,
    });
    expect(stream.model()).toBe('claude-sonnet-4-5-20250929');
    expect(stream.done()).toBe(true);
  });

  it('keeps the thinking apart, the same as the answer that is not streamed carries', () => {
    const { stream, unstreamed } = playAgainstAnswer('anthropic-stream-text.txt', 'anthropic-message.json');
    expect(unstreamed.reasoning?.texts).toEqual(['The user greets me; answer briefly.']);
    expect(stream.reasoning()).toEqual(unstreamed.reasoning);
  });

  it('keeps thinking text, and signatures and redacted thinking by their size, as they arrive', () => {
    const stream = parser();
    feed(stream, [start(), blockStart(0, { type: 'thinking', thinking: 'Let', signature: '' })]);
    expect(stream.reasoning()).toEqual({ texts: ['Let'], opaqueChars: 0 });
    feed(stream, [
      blockDelta(0, { type: 'thinking_delta', thinking: ' me think' }),
      blockDelta(0, { type: 'signature_delta', signature: 'x'.repeat(40) }),
      blockStop(0),
      blockStart(1, { type: 'redacted_thinking', data: 'y'.repeat(100) }),
      blockStop(1),
      blockStart(2, { type: 'thinking', thinking: '', signature: '' }),
      blockDelta(2, { type: 'thinking_delta', thinking: 'Again' }),
    ]);
    // The running output_tokens says nothing of it until message_delta.
    expect(stream.usage().completionTokens).toBe(1);
    expect(stream.reasoning()).toEqual({ texts: ['Let me think', 'Again'], opaqueChars: 140 });
  });

  it('is done only at message_stop, with the usage of message_start until message_delta', () => {
    const events = fixtureEvents('anthropic-stream-text.txt');
    const stream = parser();
    feed(stream, events.slice(0, 1));
    expect(stream.usage()).toEqual({
      promptTokens: 3195,
      completionTokens: 1,
      cachedPromptTokens: 1000,
      cacheWritePromptTokens: 100,
    });
    feed(stream, events.slice(1, -1));
    expect(stream.done()).toBe(false);
    expect(stream.usage().completionTokens).toBe(503);
    feed(stream, events.slice(-1));
    expect(stream.done()).toBe(true);
    expect(stream.event(JSON.stringify({ type: 'content_block_delta' }), 'content_block_delta')).toEqual([]);
  });

  it('takes the cumulative counts of message_delta, keeping those it leaves out or sends as null', () => {
    const stream = parser();
    feed(stream, [
      start({ input_tokens: 5, cache_read_input_tokens: 2, output_tokens: 1 }),
      messageDelta('end_turn', {
        input_tokens: 7,
        cache_read_input_tokens: null,
        output_tokens: 40,
        output_tokens_details: { thinking_tokens: 30 },
      }),
    ]);
    expect(stream.usage()).toEqual({
      promptTokens: 9,
      completionTokens: 40,
      cachedPromptTokens: 2,
      reasoningTokens: 30,
    });
  });

  it('leaves redacted thinking out and finishes with the mapped stop reason', () => {
    const choice = choiceOf([
      start(),
      blockStart(0, { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix' }),
      blockStop(0),
      blockStart(1, { type: 'text', text: '' }),
      blockDelta(1, { type: 'text_delta', text: 'Based on' }),
      blockDelta(1, { type: 'citations_delta', citation: { type: 'char_location' } }),
      blockDelta(1, { type: 'text_delta', text: ' my analysis' }),
      blockStop(1),
      messageDelta('max_tokens', { output_tokens: 100 }),
      STOP,
    ]);
    expect(choice).toMatchObject({ text: 'Based on my analysis', finish: 'length' });
  });

  it('sends the explanation of a refusal stop, then content_filter', () => {
    const deltas = deltasOf([
      start(),
      messageDelta(
        'refusal',
        { output_tokens: 3 },
        { stop_details: { explanation: 'Declined for safety.' } },
      ),
    ]);
    expect(deltas).toEqual([
      { type: 'refusal', choice: 0, text: 'Declined for safety.' },
      { type: 'finish', choice: 0, reason: 'content_filter' },
    ]);
  });
});

describe('anthropic stream: tool calls and JSON mode', () => {
  it('streams a tool call as the answer that is not streamed has it: id and name first, then its input', () => {
    const { stream, deltas, choice, unstreamed } = playAgainstAnswer(
      'anthropic-stream-tool-use.txt',
      'anthropic-tool-use.json',
    );
    const expected = unstreamed.choices[0];
    expect(choice.text).toBe(expected?.text);
    expect(choice.finish).toBe('tool_calls');
    expect(choice.toolCalls.map(({ id, name }) => ({ id, name }))).toEqual(
      expected?.toolCalls.map(({ id, name }) => ({ id, name })),
    );
    // The streamed JSON keeps the model's spacing; it is the same object.
    expect(JSON.parse(choice.toolCalls[0]?.arguments ?? '')).toEqual(
      JSON.parse(expected?.toolCalls[0]?.arguments ?? ''),
    );
    expect(deltas.find((d) => d.type === 'tool_call')).toEqual({
      type: 'tool_call',
      choice: 0,
      index: 0,
      id: 'toolu_01A09q90qw90lq917835lq9',
      name: 'get_weather',
      arguments: '',
    });
    expect(stream.usage()).toEqual(unstreamed.usage);
  });

  it('numbers tool_use blocks 0, 1, 2… and sends {} for a block whose input never came', () => {
    const choice = choiceOf([
      start(),
      blockStart(0, { type: 'thinking', thinking: '' }),
      blockDelta(0, { type: 'thinking_delta', thinking: 'two calls' }),
      blockDelta(0, { type: 'signature_delta', signature: 'sig' }),
      blockStop(0),
      blockStart(1, { type: 'tool_use', id: 'toolu_a', name: 'now', input: {} }),
      blockDelta(1, { type: 'input_json_delta', partial_json: '' }),
      blockStop(1),
      blockStart(2, { type: 'tool_use', id: 'toolu_b', name: 'get_weather', input: {} }),
      blockDelta(2, { type: 'input_json_delta', partial_json: '{"city":' }),
      blockDelta(2, { type: 'input_json_delta', partial_json: '"Paris"}' }),
      blockStop(2),
      blockStart(3, { type: 'tool_use', id: 'toolu_c', name: 'whole', input: { given: true } }),
      blockStop(3),
      messageDelta('tool_use', { output_tokens: 60 }),
      STOP,
    ]);
    expect(choice.text).toBe('');
    expect(choice.toolCalls).toEqual([
      { id: 'toolu_a', name: 'now', arguments: '{}' },
      { id: 'toolu_b', name: 'get_weather', arguments: '{"city":"Paris"}' },
      { id: 'toolu_c', name: 'whole', arguments: '{"given":true}' },
    ]);
    for (const call of choice.toolCalls) expect(() => JSON.parse(call.arguments)).not.toThrow();
  });

  it('streams the JSON-mode tool input as text and finishes stop, as the answer that is not streamed does', () => {
    const { stream, deltas, choice } = play('anthropic-stream-json-object.txt', JSON_MODE);
    expect(deltas.some((d) => d.type === 'tool_call')).toBe(false);
    expect(choice.finish).toBe('stop');
    expect(JSON.parse(choice.text)).toEqual({
      elements: [{ location: 'San Francisco', temperature: 58, condition: 'sunny' }],
    });
    const unstreamed = answer(
      {
        id: 'msg_1',
        type: 'message',
        role: 'assistant',
        model: 'claude-haiku-4-5-20251001',
        content: [{ type: 'tool_use', id: 'toolu_1', name: 'json_object', input: JSON.parse(choice.text) }],
        stop_reason: 'tool_use',
        usage: { input_tokens: 849, output_tokens: 47 },
      },
      JSON_MODE,
    );
    expect(JSON.parse(unstreamed.choices[0]?.text ?? '')).toEqual(JSON.parse(choice.text));
    expect(unstreamed.choices[0]?.finishReason).toBe(choice.finish);
    expect(stream.usage()).toEqual({
      promptTokens: 849,
      completionTokens: 47,
      cachedPromptTokens: 0,
      cacheWritePromptTokens: 0,
    });
    // Without JSON mode the same stream is a call of a tool named json_object.
    const plain = play('anthropic-stream-json-object.txt').choice;
    expect(plain.toolCalls).toMatchObject([{ id: 'toolu_01KFbKqPYSuAKujiL6mTfzYA', name: 'json_object' }]);
    expect(plain.finish).toBe('tool_calls');
  });

  it('sends {} as the text of a JSON-mode call whose input never came', () => {
    const choice = choiceOf(
      [
        start(),
        blockStart(0, { type: 'tool_use', id: 'toolu_1', name: 'json_object', input: {} }),
        blockStop(0),
        messageDelta('tool_use', { output_tokens: 5 }),
      ],
      JSON_MODE,
    );
    expect(choice).toMatchObject({ text: '{}', finish: 'stop', toolCalls: [] });
  });
});

describe('anthropic stream: errors', () => {
  it('throws an overloaded error event as a server error', () => {
    const { textBefore, error } = midStreamError('anthropic-stream-error.txt');
    expect(textBefore).toBe('Once upon');
    expect(error.kind).toBe('server_error');
    expect(error.retryable).toBe(true);
    expect(error.message).toContain('Overloaded');
  });

  it('classifies error events by their type', () => {
    const kindOf = (type: string) =>
      errorOf([sse({ type: 'error', error: { type, message: 'm' } }, 'error')]).kind;
    expect(kindOf('overloaded_error')).toBe('server_error');
    expect(kindOf('api_error')).toBe('server_error');
    expect(kindOf('rate_limit_error')).toBe('rate_limited');
    expect(kindOf('authentication_error')).toBe('auth');
    expect(kindOf('permission_error')).toBe('auth');
    expect(kindOf('invalid_request_error')).toBe('rejected');
    expect(kindOf('request_too_large')).toBe('rejected');
    expect(kindOf('some_future_error')).toBe('server_error');
    // The type in the data counts even without the event name.
    expect(errorOf([sse({ type: 'error', error: { type: 'rate_limit_error' } })]).kind).toBe('rate_limited');
  });

  it('keeps the key out of messages; unreadable or malformed events are bad responses', () => {
    const leaked = errorOf([
      sse({ type: 'error', error: { type: 'api_error', message: `bad ${TEST_KEY}` } }, 'error'),
    ]);
    expect(leaked.message).not.toContain(TEST_KEY);
    expect(errorOf([sse('{"type":"message_start"', 'message_start')]).kind).toBe('bad_response');
    expect(errorOf([blockStart(0, { type: 'tool_use', input: {} })]).kind).toBe('bad_response');
    expect(errorOf([start({ input_tokens: 'many', output_tokens: 1 })]).kind).toBe('bad_response');
  });

  it('ignores ping, unknown events and unknown deltas', () => {
    const deltas = deltasOf([
      start(),
      sse({ type: 'ping' }, 'ping'),
      sse(''),
      sse({ type: 'some_new_event', payload: 1 }, 'some_new_event'),
      blockStart(0, { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: {} }),
      blockDelta(0, { type: 'input_json_delta', partial_json: '{"query":"x"}' }),
      blockStop(0),
      blockStart(1, { type: 'text', text: '' }),
      blockDelta(1, { type: 'brand_new_delta', text: 'ignored' }),
      blockDelta(1, { type: 'text_delta', text: 'kept' }),
    ]);
    expect(deltas).toEqual([{ type: 'text', choice: 0, text: 'kept' }]);
  });
});
