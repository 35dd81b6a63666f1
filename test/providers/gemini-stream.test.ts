import { describe, expect, it } from 'vitest';
import { geminiAdapter } from '../../src/providers/gemini/index.js';
import { chatRequest, providerConfig, TEST_KEY } from './provider-test-helpers.js';
import { assemble, feed, fixtureEvents, sse, streamHarness } from './stream-test-helpers.js';

const gemini = providerConfig(
  'prov-gemini',
  'gemini',
  'https://generativelanguage.googleapis.com',
  'gemini-2.5-flash',
);
const { parser, deltasOf, choiceOf, errorOf, playAgainstAnswer, midStreamError } = streamHarness(
  geminiAdapter,
  gemini,
);

const USAGE = { promptTokenCount: 4, candidatesTokenCount: 2, totalTokenCount: 6 };

function response(candidates: unknown[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { candidates, modelVersion: 'gemini-2.5-flash', responseId: 'resp-1', ...extra };
}

function candidate(parts: unknown[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { content: { parts, role: 'model' }, ...extra };
}

const GENERATED_ID = /^call_[0-9a-f]{24}$/;

describe('gemini stream: text and usage', () => {
  it('streams the same text, usage and model as the answer that is not streamed; thoughts are not text', () => {
    const { stream, choice, unstreamed } = playAgainstAnswer(
      'gemini-stream-text.txt',
      'gemini-generate-content.json',
    );
    expect(choice.text).toBe(unstreamed.choices[0]?.text);
    expect(choice.text).toBe('Hello! How can I help you today?');
    expect(choice.text).not.toContain('Considering');
    expect(choice.finish).toBe('stop');
    expect(stream.usage()).toEqual(unstreamed.usage);
    expect(stream.usage()).toEqual({ promptTokens: 9, completionTokens: 1033, reasoningTokens: 1023 });
    expect(stream.model()).toBe('gemini-2.5-flash');
    expect(stream.done()).toBe(true);
  });

  it('keeps thought summaries and signatures apart, the same as the answer that is not streamed', () => {
    const { stream, unstreamed } = playAgainstAnswer(
      'gemini-stream-text.txt',
      'gemini-generate-content.json',
    );
    expect(stream.reasoning()).toEqual(unstreamed.reasoning);
    const signed = parser();
    feed(signed, [
      sse(
        response([
          candidate([
            { text: 'Hmm', thought: true },
            { text: 'Hi', thoughtSignature: 'sig-1234' },
          ]),
        ]),
      ),
    ]);
    expect(signed.reasoning()).toEqual({ texts: ['Hmm'], opaqueChars: 8 });
  });

  it('keeps the latest (cumulative) usage and is done only once the candidate finished', () => {
    const events = fixtureEvents('gemini-stream-text.txt');
    const stream = parser();
    feed(stream, events.slice(0, 2));
    expect(stream.done()).toBe(false);
    expect(stream.usage()).toEqual({ promptTokens: 9, completionTokens: 1026, reasoningTokens: 1023 });
    feed(stream, events.slice(2));
    expect(stream.done()).toBe(true);
  });

  it('is done once every candidate finished, with or without usage; usage that comes later still counts', () => {
    const stream = parser();
    feed(stream, [sse(response([candidate([{ text: 'x' }], { finishReason: 'STOP' })]))]);
    expect(stream.done()).toBe(true);
    expect(stream.usage().promptTokens).toBeUndefined();
    feed(stream, [sse(response([], { usageMetadata: USAGE }))]);
    expect(stream.done()).toBe(true);
    expect(stream.usage().promptTokens).toBe(USAGE.promptTokenCount);
  });

  it('tells candidates apart by index (missing is 0) and waits for every one to finish', () => {
    const stream = parser(chatRequest({ n: 2 }));
    const deltas = feed(stream, [
      sse(response([candidate([{ text: 'A' }]), candidate([{ text: 'B' }], { index: 1 })])),
      sse(response([candidate([{ text: 'a' }], { finishReason: 'STOP' })], { usageMetadata: USAGE })),
    ]);
    expect(stream.done()).toBe(false);
    deltas.push(
      ...feed(stream, [
        sse(
          response([candidate([{ text: 'b' }], { index: 1, finishReason: 'MAX_TOKENS' })], {
            usageMetadata: USAGE,
          }),
        ),
      ]),
    );
    expect(stream.done()).toBe(true);
    const choices = assemble(deltas);
    expect(choices.get(0)).toMatchObject({ text: 'Aa', finish: 'stop' });
    expect(choices.get(1)).toMatchObject({ text: 'Bb', finish: 'length' });
  });

  it('finishes every choice asked for with content_filter when the prompt is blocked', () => {
    const stream = parser(chatRequest({ n: 2 }));
    const deltas = feed(stream, [
      sse({
        promptFeedback: { blockReason: 'SAFETY' },
        usageMetadata: { promptTokenCount: 8, totalTokenCount: 8 },
      }),
    ]);
    expect(deltas).toEqual([
      { type: 'finish', choice: 0, reason: 'content_filter' },
      { type: 'finish', choice: 1, reason: 'content_filter' },
    ]);
    expect(stream.usage()).toEqual({ promptTokens: 8, completionTokens: 0 });
    expect(stream.done()).toBe(true);
  });

  it('maps a safety stop to content_filter', () => {
    const choice = choiceOf([sse(response([candidate([{ text: 'partial' }], { finishReason: 'SAFETY' })]))]);
    expect(choice).toMatchObject({ text: 'partial', finish: 'content_filter' });
  });

  it('converts log probabilities when they were asked for, and ignores them otherwise', () => {
    const logprobsResult = {
      chosenCandidates: [{ token: 'Hi', logProbability: -0.5 }],
      topCandidates: [
        {
          candidates: [
            { token: 'Hi', logProbability: -0.5 },
            { token: 'Hey', logProbability: -1 },
          ],
        },
      ],
    };
    const events = [sse(response([candidate([{ text: 'Hi' }], { logprobsResult })]))];
    const asked = choiceOf(events, chatRequest({ logprobs: { top: 1 } }));
    expect(asked.logprobs).toEqual([
      {
        content: [
          {
            token: 'Hi',
            logprob: -0.5,
            bytes: [72, 105],
            top_logprobs: [{ token: 'Hi', logprob: -0.5, bytes: [72, 105] }],
          },
        ],
      },
    ]);
    expect(choiceOf(events).logprobs).toEqual([]);
  });
});

describe('gemini stream: function calls', () => {
  it('streams each call whole, with the names and arguments of the answer that is not streamed', () => {
    const { stream, deltas, choice, unstreamed } = playAgainstAnswer(
      'gemini-stream-function-call.txt',
      'gemini-parallel-function-calls.json',
    );
    expect(choice.toolCalls.map(({ name, arguments: args }) => ({ name, args }))).toEqual(
      unstreamed.choices[0]?.toolCalls.map(({ name, arguments: args }) => ({ name, args })),
    );
    for (const call of choice.toolCalls) {
      expect(call.id).toMatch(GENERATED_ID);
      expect(() => JSON.parse(call.arguments)).not.toThrow();
    }
    expect(new Set(choice.toolCalls.map((call) => call.id)).size).toBe(3);
    expect(
      deltas.filter((d) => d.type === 'tool_call').map((d) => d.type === 'tool_call' && d.index),
    ).toEqual([0, 1, 2]);
    expect(choice.text).toBe('');
    expect(choice.finish).toBe('tool_calls');
    expect(stream.usage()).toEqual(unstreamed.usage);
    expect(stream.done()).toBe(true);
  });

  it('gives the same ids to the same stream, keeps Gemini ids, and a call cut by the limit stays length', () => {
    const events = fixtureEvents('gemini-stream-function-call.txt');
    const ids = choiceOf(events).toolCalls.map((call) => call.id);
    expect(choiceOf(events).toolCalls.map((call) => call.id)).toEqual(ids);
    const own = choiceOf([
      sse(
        response([
          candidate([{ functionCall: { id: 'fc-1', name: 'f', args: { a: 1 } } }], {
            finishReason: 'MAX_TOKENS',
          }),
        ]),
      ),
    ]);
    expect(own.toolCalls).toEqual([{ id: 'fc-1', name: 'f', arguments: '{"a":1}' }]);
    expect(own.finish).toBe('length');
  });

  it('refuses a call without a name or with args that are not an object', () => {
    expect(errorOf([sse(response([candidate([{ functionCall: { args: {} } }])]))]).kind).toBe('bad_response');
    expect(errorOf([sse(response([candidate([{ functionCall: { name: 'f', args: [1] } }])]))]).kind).toBe(
      'bad_response',
    );
  });
});

describe('gemini stream: errors', () => {
  it('throws an error chunk by its code: 503 is a server error', () => {
    const { textBefore, error } = midStreamError('gemini-stream-error.txt');
    expect(textBefore).toBe('Once upon a time');
    expect(error.kind).toBe('server_error');
    expect(error.message).toContain('The model is overloaded');
  });

  it('classifies error chunks by code, else by status', () => {
    const kindOf = (error: Record<string, unknown>) => errorOf([sse({ error })]).kind;
    expect(kindOf({ code: 429, message: 'quota', status: 'RESOURCE_EXHAUSTED' })).toBe('rate_limited');
    expect(kindOf({ message: 'quota', status: 'RESOURCE_EXHAUSTED' })).toBe('rate_limited');
    expect(kindOf({ code: 500, message: 'internal', status: 'INTERNAL' })).toBe('server_error');
    expect(
      kindOf({
        code: 400,
        message: 'API key not valid.',
        status: 'INVALID_ARGUMENT',
        details: [{ reason: 'API_KEY_INVALID' }],
      }),
    ).toBe('auth');
    expect(kindOf({ code: 400, message: 'bad', status: 'INVALID_ARGUMENT' })).toBe('rejected');
    expect(kindOf({ message: 'something' })).toBe('server_error');
  });

  it('keeps the key out of messages; unreadable events are bad responses; unknown fields are ignored', () => {
    const leaked = errorOf([sse({ error: { code: 500, message: `key=${TEST_KEY}` } })]);
    expect(leaked.message).not.toContain(TEST_KEY);
    expect(errorOf([sse('{"candidates":')]).kind).toBe('bad_response');
    expect(errorOf([sse(response(['x']))]).kind).toBe('bad_response');
    const deltas = deltasOf([
      sse(''),
      sse(
        response(
          [
            candidate([{ text: 'ok', futurePartField: 1 }, { executableCode: { code: 'print(1)' } }], {
              safetyRatings: [],
              citationMetadata: {},
            }),
          ],
          { createTime: '2026-01-01T00:00:00Z', newTopLevelField: {} },
        ),
      ),
    ]);
    expect(deltas).toEqual([{ type: 'text', choice: 0, text: 'ok' }]);
  });
});
