import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '../../src/json-depth.js';
import { anthropicAdapter } from '../../src/providers/anthropic/index.js';
import { geminiAdapter } from '../../src/providers/gemini/index.js';
import { openaiCompatibleAdapter } from '../../src/providers/openai-compatible/index.js';
import { toolArgumentsObject } from '../../src/providers/tool-arguments.js';
import type { ProviderAdapter, ProviderConfig, UpstreamChatRequest } from '../../src/providers/types.js';
import { catchError, chatRequest, httpResponse, providerConfig } from './provider-test-helpers.js';

/**
 * What an upstream's answer may not be, in every parser, plain and streamed: a choice, candidate, tool
 * call or content block numbered far beyond what was asked (the gateway would otherwise walk or keep every
 * number below it), or JSON nested thousands of levels deep (the gateway's `JSON.stringify` of tool call
 * arguments, of log probabilities or of the answer would overflow the stack: a 500). Each is the upstream's
 * fault, `bad_response` — a 502 that is tried elsewhere — and is found in O(size of the answer).
 */

const deepseek = providerConfig(
  'prov-deepseek',
  'openai-compatible',
  'http://127.0.0.1:1/v1',
  'deepseek-chat',
);
const claude = providerConfig('prov-claude', 'anthropic', 'http://127.0.0.1:1', 'claude-sonnet');
const gemini = providerConfig('prov-gemini', 'gemini', 'http://127.0.0.1:1', 'gemini-2.5-flash');

const HUGE_INDEXES = [2_000_000, 4_000_000_000] as const;
/** The nesting the finding measured: far past the stack of a recursive walk. */
const DEEP_LEVELS = 20_000;

/** JSON text of an object nested `levels` deep: `{"a":{"a":…1…}}`. */
function deepObjectText(levels: number): string {
  return `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
}

/** `template` as JSON text with the string `"DEEP"` replaced by a `levels`-deep object. */
function withDeep(template: unknown, levels = DEEP_LEVELS): string {
  return JSON.stringify(template).replace('"DEEP"', deepObjectText(levels));
}

function parsePlain(
  adapter: ProviderAdapter,
  provider: ProviderConfig,
  body: string,
  request = chatRequest(),
) {
  return adapter.parseResponse(provider, httpResponse(200, body), request);
}

function parseStream(
  adapter: ProviderAdapter,
  provider: ProviderConfig,
  events: readonly string[],
  request: UpstreamChatRequest = chatRequest(),
) {
  const parser = adapter.streamParser(provider, request);
  return events.flatMap((data) => parser.event(data, undefined));
}

function openaiChunk(choices: unknown[]): Record<string, unknown> {
  return { id: 'c1', object: 'chat.completion.chunk', model: 'deepseek-chat', choices };
}

function openaiAnswer(choices: unknown[]): Record<string, unknown> {
  return {
    id: 'c1',
    object: 'chat.completion',
    model: 'deepseek-chat',
    choices,
    usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 },
  };
}

describe('a choice index beyond the n asked for is the upstream fault', () => {
  it.each(HUGE_INDEXES)('openai-compatible stream, choice index %i', (index) => {
    const error = catchError(() =>
      parseStream(openaiCompatibleAdapter, deepseek, [
        JSON.stringify(openaiChunk([{ index, delta: { content: 'hi' }, finish_reason: null }])),
      ]),
    );
    expect(error.kind).toBe('bad_response');
    expect(error.retryable).toBe(true);
    expect(error.message).toContain(`choice index ${index}`);
  });

  it.each(HUGE_INDEXES)('openai-compatible answer, choice index %i', (index) => {
    const body = openaiAnswer([{ index, message: { content: 'hi' }, finish_reason: 'stop' }]);
    const error = catchError(() => parsePlain(openaiCompatibleAdapter, deepseek, JSON.stringify(body)));
    expect(error.kind).toBe('bad_response');
  });

  it.each(HUGE_INDEXES)('openai-compatible stream, tool call index %i within a choice', (index) => {
    const piece = { index, id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } };
    const error = catchError(() =>
      parseStream(openaiCompatibleAdapter, deepseek, [
        JSON.stringify(openaiChunk([{ index: 0, delta: { tool_calls: [piece] }, finish_reason: null }])),
      ]),
    );
    expect(error.kind).toBe('bad_response');
    expect(error.message).toContain(`tool call index ${index}`);
  });

  it.each(HUGE_INDEXES)('gemini stream and answer, candidate index %i', (index) => {
    const chunk = { candidates: [{ index, content: { role: 'model', parts: [{ text: 'hi' }] } }] };
    expect(catchError(() => parseStream(geminiAdapter, gemini, [JSON.stringify(chunk)])).kind).toBe(
      'bad_response',
    );
    const answer = { ...chunk, usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 1 } };
    expect(catchError(() => parsePlain(geminiAdapter, gemini, JSON.stringify(answer))).kind).toBe(
      'bad_response',
    );
  });

  it.each(HUGE_INDEXES)('anthropic stream, content block index %i', (index) => {
    const events = [
      { type: 'message_start', message: { model: 'claude', usage: { input_tokens: 3, output_tokens: 1 } } },
      { type: 'content_block_start', index, content_block: { type: 'text', text: '' } },
    ].map((event) => JSON.stringify(event));
    const error = catchError(() => parseStream(anthropicAdapter, claude, events));
    expect(error.kind).toBe('bad_response');
    expect(error.message).toContain(`content block index ${index}`);
  });

  it('an index equal to n, or negative, or fractional is refused; every index below n is read', () => {
    const n3 = chatRequest({ n: 3 });
    for (const index of [3, -1, 1.5]) {
      const chunk = openaiChunk([{ index, delta: { content: 'x' }, finish_reason: null }]);
      expect(
        catchError(() => parseStream(openaiCompatibleAdapter, deepseek, [JSON.stringify(chunk)], n3)).kind,
      ).toBe('bad_response');
    }
    const chunks = [2, 0, 1].map((index) =>
      JSON.stringify(openaiChunk([{ index, delta: { content: `c${index}` }, finish_reason: 'stop' }])),
    );
    const deltas = parseStream(openaiCompatibleAdapter, deepseek, chunks, n3);
    expect(deltas.filter((d) => d.type === 'text').map((d) => d.choice)).toEqual([2, 0, 1]);
    // A choice without an index is numbered by its place, which must be below n too.
    const unnumbered = openaiAnswer([
      { message: { content: 'a' }, finish_reason: 'stop' },
      { message: { content: 'b' }, finish_reason: 'stop' },
    ]);
    expect(
      catchError(() => parsePlain(openaiCompatibleAdapter, deepseek, JSON.stringify(unnumbered))).kind,
    ).toBe('bad_response');
    expect(
      parsePlain(openaiCompatibleAdapter, deepseek, JSON.stringify(unnumbered), chatRequest({ n: 2 }))
        .choices,
    ).toHaveLength(2);
  });

  it('a streamed choice may carry at most 128 tool calls', () => {
    const piece = (i: number) => ({ index: i, id: `call_${i}`, function: { name: 'f', arguments: '{}' } });
    const chunk = (pieces: unknown[]) =>
      JSON.stringify(openaiChunk([{ index: 0, delta: { tool_calls: pieces }, finish_reason: null }]));
    const within = Array.from({ length: 128 }, (_, i) => piece(i));
    const deltas = parseStream(openaiCompatibleAdapter, deepseek, [chunk(within)]);
    expect(deltas.filter((d) => d.type === 'tool_call')).toHaveLength(128);
    expect(catchError(() => parseStream(openaiCompatibleAdapter, deepseek, [chunk([piece(128)])])).kind).toBe(
      'bad_response',
    );
    // A host that numbers every call 0 but gives each a new id: the 129th is one too many.
    const renumbered = Array.from({ length: 129 }, (_, i) => chunk([{ ...piece(0), id: `call_${i}` }]));
    expect(catchError(() => parseStream(openaiCompatibleAdapter, deepseek, renumbered)).kind).toBe(
      'bad_response',
    );
  });
});

/** Each place of an answer where an upstream's nested JSON reaches a recursive walk. */
const DEEP_CASES: { name: string; read: (levels: number) => unknown }[] = [
  {
    name: 'openai-compatible tool call arguments (answer)',
    read: (levels) =>
      parsePlain(
        openaiCompatibleAdapter,
        deepseek,
        withDeep(
          openaiAnswer([
            {
              index: 0,
              message: {
                content: null,
                tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: 'DEEP' } }],
              },
              finish_reason: 'tool_calls',
            },
          ]),
          levels,
        ),
      ),
  },
  {
    name: 'openai-compatible tool call arguments (stream)',
    read: (levels) =>
      parseStream(openaiCompatibleAdapter, deepseek, [
        withDeep(
          openaiChunk([
            {
              index: 0,
              delta: { tool_calls: [{ index: 0, id: 'c', function: { name: 'f', arguments: 'DEEP' } }] },
              finish_reason: null,
            },
          ]),
          levels,
        ),
      ]),
  },
  {
    name: 'openai-compatible logprobs (answer)',
    read: (levels) =>
      parsePlain(
        openaiCompatibleAdapter,
        deepseek,
        withDeep(
          openaiAnswer([
            { index: 0, message: { content: 'x' }, logprobs: { content: ['DEEP'] }, finish_reason: 'stop' },
          ]),
          levels,
        ),
        chatRequest({ logprobs: { top: undefined } }),
      ),
  },
  {
    name: 'openai-compatible logprobs (stream)',
    read: (levels) =>
      parseStream(openaiCompatibleAdapter, deepseek, [
        withDeep(
          openaiChunk([
            { index: 0, delta: { content: 'x' }, logprobs: { content: ['DEEP'] }, finish_reason: null },
          ]),
          levels,
        ),
      ]),
  },
  {
    name: 'gemini functionCall args (answer)',
    read: (levels) =>
      parsePlain(
        geminiAdapter,
        gemini,
        withDeep(
          {
            candidates: [
              {
                content: { role: 'model', parts: [{ functionCall: { name: 'f', args: 'DEEP' } }] },
                finishReason: 'STOP',
              },
            ],
            usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 1 },
          },
          levels,
        ),
      ),
  },
  {
    name: 'gemini functionCall args (stream)',
    read: (levels) =>
      parseStream(geminiAdapter, gemini, [
        withDeep(
          {
            candidates: [
              { content: { role: 'model', parts: [{ functionCall: { name: 'f', args: 'DEEP' } }] } },
            ],
          },
          levels,
        ),
      ]),
  },
  {
    name: 'anthropic tool_use input (answer)',
    read: (levels) =>
      parsePlain(
        anthropicAdapter,
        claude,
        withDeep(
          {
            id: 'msg_1',
            type: 'message',
            role: 'assistant',
            model: 'claude',
            content: [{ type: 'tool_use', id: 'toolu_1', name: 'f', input: 'DEEP' }],
            stop_reason: 'tool_use',
            usage: { input_tokens: 3, output_tokens: 1 },
          },
          levels,
        ),
      ),
  },
  {
    name: 'anthropic tool_use input (stream)',
    read: (levels) =>
      parseStream(anthropicAdapter, claude, [
        JSON.stringify({ type: 'message_start', message: { model: 'claude', usage: { input_tokens: 3 } } }),
        withDeep(
          {
            type: 'content_block_start',
            index: 0,
            content_block: { type: 'tool_use', id: 't', name: 'f', input: 'DEEP' },
          },
          levels,
        ),
        JSON.stringify({ type: 'content_block_stop', index: 0 }),
      ]),
  },
];

describe(`upstream JSON nested ${DEEP_LEVELS} levels deep is the upstream fault, never a stack overflow`, () => {
  it.each(DEEP_CASES)('$name', ({ read }) => {
    const error = catchError(() => read(DEEP_LEVELS));
    expect(error.kind).toBe('bad_response');
    expect(error.message).toContain(`nested more than ${MAX_JSON_DEPTH} levels deep`);
  });

  it.each(DEEP_CASES)('$name: a few levels of nesting are read', ({ read }) => {
    expect(() => read(8)).not.toThrow();
  });

  it('a past tool call whose arguments nest too deep cannot be carried to Anthropic or Gemini', () => {
    expect(toolArgumentsObject(deepObjectText(DEEP_LEVELS))).toBeUndefined();
    expect(toolArgumentsObject(deepObjectText(MAX_JSON_DEPTH + 1))).toBeUndefined();
    expect(toolArgumentsObject(deepObjectText(MAX_JSON_DEPTH))).toBeDefined();
  });
});
