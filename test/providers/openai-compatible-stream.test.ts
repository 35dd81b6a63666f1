import { describe, expect, it } from 'vitest';
import { openaiCompatibleAdapter } from '../../src/providers/openai-compatible/index.js';
import { chatRequest, providerConfig, TEST_KEY } from './provider-test-helpers.js';
import { assemble, feed, fixtureEvents, sse, streamHarness } from './stream-test-helpers.js';

const deepseek = providerConfig(
  'prov-deepseek',
  'openai-compatible',
  'https://api.deepseek.com/v1',
  'deepseek-chat',
);
const { parser, deltasOf, choiceOf, errorOf, playAgainstAnswer, midStreamError } = streamHarness(
  openaiCompatibleAdapter,
  deepseek,
);

/** A `chat.completion.chunk` holding `choices`. */
function chunk(choices: unknown[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { id: 'chatcmpl-1', object: 'chat.completion.chunk', model: 'deepseek-chat', choices, ...extra };
}

function delta(value: Record<string, unknown>, finishReason: string | null = null, index = 0) {
  return { index, delta: value, logprobs: null, finish_reason: finishReason };
}

const GENERATED_ID = /^call_[0-9a-f]{24}$/;

describe('openai-compatible stream: text and usage', () => {
  it('streams the same text, usage and model as the answer that is not streamed', () => {
    const { stream, deltas, choice, unstreamed } = playAgainstAnswer(
      'openai-stream-text.txt',
      'openai-deepseek-chat.json',
    );
    expect(choice.text).toBe(unstreamed.choices[0]?.text);
    expect(choice.text).toBe('Hello! How can I help you today?');
    expect(choice.finish).toBe('stop');
    expect(choice.toolCalls).toEqual([]);
    expect(deltas.filter((d) => d.type === 'text').length).toBe(9);
    expect(stream.usage()).toEqual(unstreamed.usage);
    expect(stream.usage()).toEqual({ promptTokens: 16, completionTokens: 10, cachedPromptTokens: 0 });
    expect(stream.model()).toBe('deepseek-chat');
    expect(stream.done()).toBe(true);
  });

  it('is not done, and reports no usage, before the usage chunk and [DONE]', () => {
    const events = fixtureEvents('openai-stream-text.txt');
    const stream = parser();
    feed(stream, events.slice(0, -2));
    expect(stream.done()).toBe(false);
    expect(stream.usage()).toEqual({ promptTokens: undefined, completionTokens: undefined });
    expect(stream.model()).toBe('deepseek-chat');
    feed(stream, events.slice(-2, -1));
    // Every choice finished and the usage came: nothing more is coming even without [DONE].
    expect(stream.done()).toBe(true);
  });

  it('is done at [DONE] even without usage, and ignores what comes after it', () => {
    const stream = parser();
    feed(stream, [sse(chunk([delta({ content: 'Hi' })])), sse('[DONE]')]);
    expect(stream.done()).toBe(true);
    expect(stream.event(JSON.stringify(chunk([delta({ content: 'more' })])), undefined)).toEqual([]);
  });

  it('leaves reasoning out of the text and bills it through the usage (DeepSeek reasoner)', () => {
    const { stream, choice, unstreamed } = playAgainstAnswer(
      'openai-stream-deepseek-reasoner.txt',
      'openai-deepseek-reasoner.json',
    );
    expect(choice.text).toBe(unstreamed.choices[0]?.text);
    expect(stream.usage()).toEqual(unstreamed.usage);
    expect(stream.usage()).toMatchObject({ completionTokens: 48, reasoningTokens: 38 });
    expect(stream.model()).toBe('deepseek-v4-pro');
    expect(stream.done()).toBe(true);
  });

  it('keeps the reasoning apart, streamed or not (DeepSeek reasoner)', () => {
    const { stream, unstreamed } = playAgainstAnswer(
      'openai-stream-deepseek-reasoner.txt',
      'openai-deepseek-reasoner.json',
    );
    expect(unstreamed.reasoning?.texts[0]).toMatch(/^We are asked: .* offer assistance\.$/);
    expect(stream.reasoning()).toEqual({
      texts: [
        'We are asked: "You are a helpful assistant" and the user says "Hi". I\'ll just greet the user.',
      ],
      opaqueChars: 0,
    });
  });

  it('keeps reasoning_content (or else reasoning), thinking parts and encrypted details per choice', () => {
    const stream = parser(chatRequest({ n: 2 }));
    expect(stream.reasoning()).toBeUndefined();
    const deltas = feed(stream, [
      sse(chunk([delta({ reasoning_content: 'Deep', reasoning: 'Deep' })])),
      sse(chunk([delta({ reasoning: 'Groq' }, null, 1)])),
      sse(chunk([delta({ content: [{ type: 'thinking', thinking: [{ type: 'text', text: ' seek' }] }] })])),
      sse(
        chunk([
          delta({ reasoning_details: [{ type: 'reasoning.encrypted', data: 'abcdefgh' }] }, null, 1),
          delta({ content: 'Hi' }),
        ]),
      ),
    ]);
    expect(deltas).toEqual([{ type: 'text', choice: 0, text: 'Hi' }]);
    expect(stream.reasoning()).toEqual({ texts: ['Deep seek', 'Groq'], opaqueChars: 8 });
  });

  it('reads cached and reasoning token details of the usage chunk', () => {
    const stream = parser();
    feed(stream, [
      sse(
        chunk([], {
          usage: {
            prompt_tokens: 2006,
            completion_tokens: 300,
            total_tokens: 2306,
            prompt_tokens_details: { cached_tokens: 1920 },
            completion_tokens_details: { reasoning_tokens: 128 },
          },
        }),
      ),
    ]);
    expect(stream.usage()).toEqual({
      promptTokens: 2006,
      completionTokens: 300,
      cachedPromptTokens: 1920,
      reasoningTokens: 128,
    });
  });

  it("reads Groq's usage from x_groq.usage, and prefers usage when a chunk has both", () => {
    const groq = parser();
    feed(groq, [
      sse(chunk([delta({ content: 'Hi' }, 'stop')])),
      sse(
        chunk([], {
          x_groq: { id: 'req_1', usage: { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 } },
        }),
      ),
    ]);
    expect(groq.usage()).toEqual({ promptTokens: 12, completionTokens: 3 });
    // Every choice finished and the usage came: complete without [DONE].
    expect(groq.done()).toBe(true);
    const both = parser();
    feed(both, [
      sse(
        chunk([], {
          usage: { prompt_tokens: 20, completion_tokens: 5 },
          x_groq: { usage: { prompt_tokens: 12, completion_tokens: 3 } },
        }),
      ),
    ]);
    expect(both.usage()).toEqual({ promptTokens: 20, completionTokens: 5 });
  });

  it('passes refusals, logprobs and list content on', () => {
    const logprobs = {
      content: [{ token: 'Hi', logprob: -0.1, bytes: [72, 105], top_logprobs: [] }],
      refusal: null,
    };
    const choice = choiceOf([
      sse(chunk([{ ...delta({ content: 'Hi' }), logprobs }])),
      sse(chunk([delta({ refusal: "I'm sorry, I cannot help with that." })])),
      // Mistral sends content as parts; thinking parts are not text.
      sse(
        chunk([
          delta({
            content: [
              { type: 'thinking', thinking: [] },
              { type: 'text', text: ' there' },
            ],
          }),
        ]),
      ),
      sse(chunk([delta({ content: null }, 'stop')], { usage: { prompt_tokens: 1, completion_tokens: 2 } })),
    ]);
    expect(choice.text).toBe('Hi there');
    expect(choice.refusal).toBe("I'm sorry, I cannot help with that.");
    expect(choice.logprobs).toEqual([logprobs]);
    // A chunk's `logprobs: {content: null}` carries none and is not passed on.
    expect(deltasOf([sse(chunk([{ ...delta({ content: 'x' }), logprobs: { content: null } }]))])).toEqual([
      { type: 'text', choice: 0, text: 'x' },
    ]);
  });

  it('tells choices apart by index and is done once each finished and the usage came', () => {
    const stream = parser(chatRequest({ n: 2 }));
    const deltas = feed(stream, [
      sse(chunk([delta({ content: 'A' }, null, 0), delta({ content: 'B' }, null, 1)])),
      sse(chunk([delta({ content: 'a' }, 'stop', 0)])),
      sse(chunk([delta({ content: 'b' }, 'length', 1)])),
    ]);
    expect(stream.done()).toBe(false);
    feed(stream, [sse(chunk([], { usage: { prompt_tokens: 3, completion_tokens: 4 } }))]);
    expect(stream.done()).toBe(true);
    const choices = assemble(deltas);
    expect(choices.get(0)).toMatchObject({ text: 'Aa', finish: 'stop' });
    expect(choices.get(1)).toMatchObject({ text: 'Bb', finish: 'length' });
  });
});

describe('openai-compatible stream: tool calls', () => {
  it('streams the same calls as the answer that is not streamed: id and name first, then the arguments', () => {
    const { stream, deltas, choice, unstreamed } = playAgainstAnswer(
      'openai-stream-tool-calls.txt',
      'openai-parallel-tool-calls.json',
    );
    expect(choice.toolCalls).toEqual(unstreamed.choices[0]?.toolCalls);
    for (const call of choice.toolCalls) expect(() => JSON.parse(call.arguments)).not.toThrow();
    expect(choice.text).toBe('');
    expect(choice.finish).toBe('tool_calls');
    expect(deltas.filter((d) => d.type === 'tool_call' && d.id !== undefined)).toEqual([
      { type: 'tool_call', choice: 0, index: 0, id: 'call_12345xyz', name: 'get_weather', arguments: '' },
      { type: 'tool_call', choice: 0, index: 1, id: 'call_67890abc', name: 'get_weather', arguments: '' },
      { type: 'tool_call', choice: 0, index: 2, id: 'call_99999def', name: 'send_email', arguments: '' },
    ]);
    expect(stream.usage()).toMatchObject({ promptTokens: 149, completionTokens: 81 });
    expect(stream.done()).toBe(true);
  });

  it('gives calls a host sent without an id stable, distinct ids', () => {
    const events = [
      sse(chunk([delta({ tool_calls: [{ index: 0, function: { name: 'f', arguments: '{"a"' } }] })])),
      sse(chunk([delta({ tool_calls: [{ index: 0, function: { arguments: ':1}' } }] })])),
      sse(
        chunk([
          delta({ tool_calls: [{ index: 1, function: { name: 'f', arguments: '{}' } }] }, 'tool_calls'),
        ]),
      ),
    ];
    const first = choiceOf(events).toolCalls;
    const again = choiceOf(events).toolCalls;
    expect(first.map((call) => call.id)).toEqual(again.map((call) => call.id));
    expect(first[0]?.id).toMatch(GENERATED_ID);
    expect(first[1]?.id).toMatch(GENERATED_ID);
    expect(first[0]?.id).not.toBe(first[1]?.id);
    expect(first).toMatchObject([
      { name: 'f', arguments: '{"a":1}' },
      { name: 'f', arguments: '{}' },
    ]);
    // The next turn of the conversation gets other ids.
    const nextTurn = chatRequest({ messages: [{ role: 'user', content: 'again' }] });
    expect(choiceOf(events, nextTurn).toolCalls[0]?.id).not.toBe(first[0]?.id);
  });

  it('sends an id repeated on every piece once, and holds arguments back until the name came', () => {
    const deltas = deltasOf([
      sse(chunk([delta({ tool_calls: [{ index: 0, id: 'call_1', function: { arguments: '{"q":' } }] })])),
      sse(
        chunk([
          delta({ tool_calls: [{ index: 0, id: 'call_1', function: { name: 'search', arguments: '' } }] }),
        ]),
      ),
      sse(chunk([delta({ tool_calls: [{ index: 0, id: 'call_1', function: { arguments: '"x"}' } }] })])),
    ]);
    expect(deltas).toEqual([
      { type: 'tool_call', choice: 0, index: 0, id: 'call_1', name: 'search', arguments: '{"q":' },
      { type: 'tool_call', choice: 0, index: 0, arguments: '"x"}' },
    ]);
  });

  it('takes a new id with a name under an index already used as a new call (hosts that number every call 0)', () => {
    const choice = choiceOf([
      sse(chunk([delta({ tool_calls: [{ index: 0, id: 'a', function: { name: 'f', arguments: '{}' } }] })])),
      sse(
        chunk([
          delta({ tool_calls: [{ index: 0, id: 'b', function: { name: 'g', arguments: '{"x":1}' } }] }),
        ]),
      ),
    ]);
    expect(choice.toolCalls).toEqual([
      { id: 'a', name: 'f', arguments: '{}' },
      { id: 'b', name: 'g', arguments: '{"x":1}' },
    ]);
  });

  it('reads whole calls, arguments given as an object, and the legacy function_call', () => {
    const choice = choiceOf([
      sse(
        chunk([
          delta({
            tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: { a: 1 } } }],
          }),
        ]),
      ),
      sse(chunk([delta({}, 'tool_calls')])),
    ]);
    expect(choice.toolCalls).toEqual([{ id: 'c1', name: 'f', arguments: '{"a":1}' }]);
    const legacy = choiceOf([
      sse(chunk([delta({ function_call: { name: 'lookup', arguments: '{"id"' } })])),
      sse(chunk([delta({ function_call: { arguments: ':7}' } }, 'function_call')])),
    ]);
    expect(legacy.toolCalls).toMatchObject([{ name: 'lookup', arguments: '{"id":7}' }]);
    expect(legacy.toolCalls[0]?.id).toMatch(GENERATED_ID);
    expect(legacy.finish).toBe('tool_calls');
  });
});

describe('openai-compatible stream: errors', () => {
  it('throws an error sent mid-stream as a server error, with the upstream message', () => {
    const { textBefore, error } = midStreamError('openai-stream-error.txt');
    expect(textBefore).toBe('Once upon');
    expect(error.kind).toBe('server_error');
    expect(error.retryable).toBe(true);
    expect(error.message).toContain('The server had an error while processing your request');
  });

  it('classifies a mid-stream error by what it says: rate limit, bad key, HTTP code', () => {
    const kindOf = (body: unknown, name?: string) => errorOf([sse(body, name)]).kind;
    expect(
      kindOf({ error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' } }),
    ).toBe('rate_limited');
    expect(
      kindOf({ error: { message: 'quota', type: 'insufficient_quota', code: 'insufficient_quota' } }),
    ).toBe('rate_limited');
    expect(kindOf({ error: { message: 'Too many requests', code: 429 } })).toBe('rate_limited');
    expect(
      kindOf({ error: { message: 'bad key', type: 'invalid_request_error', code: 'invalid_api_key' } }),
    ).toBe('auth');
    expect(kindOf({ error: { message: 'upstream exploded', code: 502 } })).toBe('server_error');
    expect(kindOf({ error: 'something broke' })).toBe('server_error');
    expect(kindOf({ message: 'Overloaded' }, 'error')).toBe('server_error');
    expect(kindOf('not json at all', 'error')).toBe('server_error');
  });

  it('never lets the key into a message, and an unreadable event is a bad response', () => {
    const leaked = errorOf([sse({ error: { message: `invalid key ${TEST_KEY}` } })]);
    expect(leaked.message).not.toContain(TEST_KEY);
    expect(errorOf([sse('{"choices": [')]).kind).toBe('bad_response');
    expect(errorOf([sse('[1,2]')]).kind).toBe('bad_response');
    expect(errorOf([sse(chunk(['nope']))]).kind).toBe('bad_response');
    expect(errorOf([sse(chunk([], { usage: { prompt_tokens: -1, completion_tokens: 1 } }))]).kind).toBe(
      'bad_response',
    );
  });

  it('ignores unknown fields and events it does not know', () => {
    const deltas = deltasOf([
      sse(
        chunk([delta({ content: 'ok', audio: { id: 'x' } })], {
          x_custom: { anything: true },
          service_tier: 'default',
        }),
      ),
      sse({ object: 'keep-alive' }),
      sse(''),
      sse(' '),
    ]);
    expect(deltas).toEqual([{ type: 'text', choice: 0, text: 'ok' }]);
  });
});
