import { describe, expect, it } from 'vitest';
import { convertGeminiLogprobs } from '../../src/providers/gemini/convert-gemini-logprobs.js';
import { geminiAdapter } from '../../src/providers/gemini/index.js';
import type { ChatResult, UpstreamChatRequest } from '../../src/providers/types.js';
import { catchError, chatRequest, fixture, httpResponse, providerConfig } from './provider-test-helpers.js';

/*
 * Fixtures: gemini-function-call.json is the answer recorded in the Gemini cookbook's "Function calling
 * with REST" quickstart (find_theaters); gemini-json-structured-output.json holds the text recorded in
 * its "JSON mode with REST" quickstart; gemini-thinking.json is abridged from the answer and counts
 * recorded in "Use Gemini thinking" (REST); gemini-parallel-function-calls.json is the function-calling
 * guide's parallel example (power_disco_ball, start_music, dim_lights) in the GenerateContentResponse
 * shape of a Gemini 2.5 answer; gemini-logprobs.json and gemini-two-candidates.json follow the API
 * reference's Candidate / LogprobsResult shapes.
 */

const gemini = providerConfig(
  'prov-gemini',
  'gemini',
  'https://generativelanguage.googleapis.com',
  'gemini-2.5-flash',
);

function parse(body: unknown, overrides: Partial<UpstreamChatRequest> = {}): ChatResult {
  return geminiAdapter.parseResponse(gemini, httpResponse(200, body), chatRequest(overrides));
}

const CALL_ID = /^call_[0-9a-f]{24}$/;

describe('gemini response: function calls', () => {
  it('reads a functionCall part as a tool call with a generated id, no text and finish reason tool_calls', () => {
    const result = parse(fixture('gemini-function-call.json'));
    expect(result).toEqual({
      choices: [
        {
          text: null,
          toolCalls: [
            {
              id: expect.stringMatching(CALL_ID),
              name: 'find_theaters',
              arguments: '{"movie":"Barbie","location":"Mountain View, CA"}',
            },
          ],
          finishReason: 'tool_calls',
        },
      ],
      usage: { promptTokens: undefined, completionTokens: undefined },
      model: undefined,
    });
  });

  it('generates ids that are stable for one answer to one request and differ between turns', () => {
    const first = parse(fixture('gemini-function-call.json')).choices[0]?.toolCalls[0]?.id;
    expect(parse(fixture('gemini-function-call.json')).choices[0]?.toolCalls[0]?.id).toBe(first);
    const later = chatRequest().messages.concat([{ role: 'user', content: 'Again?' }]);
    expect(
      parse(fixture('gemini-function-call.json'), { messages: later }).choices[0]?.toolCalls[0]?.id,
    ).not.toBe(first);
  });

  it('reads parallel calls in order, each with its own id, and skips the thought signature', () => {
    const result = parse(fixture('gemini-parallel-function-calls.json'));
    const [choice] = result.choices;
    expect(choice?.text).toBeNull();
    expect(choice?.finishReason).toBe('tool_calls');
    expect(choice?.toolCalls.map(({ name, arguments: args }) => [name, args])).toEqual([
      ['power_disco_ball', '{"power":true}'],
      ['start_music', '{"energetic":true,"loud":true,"bpm":120}'],
      ['dim_lights', '{"brightness":0.5}'],
    ]);
    const ids = choice?.toolCalls.map((call) => call.id) ?? [];
    for (const id of ids) expect(id).toMatch(CALL_ID);
    expect(new Set(ids).size).toBe(3);
    expect(result.usage).toEqual({ promptTokens: 118, completionTokens: 35 + 109, reasoningTokens: 109 });
    expect(result.model).toBe('gemini-2.5-flash');
  });

  it("keeps Gemini's own call id, text beside calls, and {} for absent args", () => {
    const body = {
      candidates: [
        {
          content: {
            role: 'model',
            parts: [
              { text: 'Checking.' },
              { functionCall: { id: 'fc-7', name: 'now' } },
              { functionCall: { name: 'weather', args: { city: 'Oslo' } } },
            ],
          },
          finishReason: 'STOP',
        },
      ],
    };
    const [choice] = parse(body).choices;
    expect(choice?.text).toBe('Checking.');
    expect(choice?.toolCalls[0]).toEqual({ id: 'fc-7', name: 'now', arguments: '{}' });
    expect(choice?.toolCalls[1]?.id).toMatch(CALL_ID);
  });

  it('a call cut at the token limit stays length; a nameless call or non-object args is unreadable', () => {
    const cut = {
      candidates: [
        { content: { parts: [{ functionCall: { name: 'now', args: {} } }] }, finishReason: 'MAX_TOKENS' },
      ],
    };
    expect(parse(cut).choices[0]?.finishReason).toBe('length');
    for (const functionCall of [{ args: {} }, { name: '', args: {} }, { name: 'now', args: [1] }, 'now']) {
      const body = { candidates: [{ content: { parts: [{ functionCall }] }, finishReason: 'STOP' }] };
      expect(catchError(() => parse(body)).kind).toBe('bad_response');
    }
  });
});

describe('gemini response: structured output and thinking', () => {
  it('returns the JSON of a structured-output answer as the text', () => {
    const [choice] = parse(fixture('gemini-json-structured-output.json'), {
      responseFormat: { type: 'json_object' },
    }).choices;
    expect(choice?.finishReason).toBe('stop');
    expect(JSON.parse(choice?.text ?? '')).toEqual([
      { recipe_name: 'Chocolate Chip Cookies' },
      { recipe_name: 'Peanut Butter Cookies' },
      { recipe_name: 'Oatmeal Raisin Cookies' },
      { recipe_name: 'Sugar Cookies' },
      { recipe_name: 'Shortbread Cookies' },
    ]);
  });

  it('never returns thoughts as text and bills thinking as output, reported as reasoning tokens', () => {
    const result = parse(fixture('gemini-thinking.json'), { reasoningEffort: 'medium' });
    expect(result.choices).toEqual([
      {
        text: 'This is a fun one! Given these clues, a **platypus**, a **water shrew** or a **water vole** could fit. Ask: "Does it lay eggs?"',
        toolCalls: [],
        finishReason: 'stop',
      },
    ]);
    expect(result.usage).toEqual({ promptTokens: 58, completionTokens: 820 + 1477, reasoningTokens: 1477 });
  });
});

describe('gemini response: several candidates', () => {
  it('reads each candidate as its own choice', () => {
    const result = parse(fixture('gemini-two-candidates.json'), { n: 2 });
    expect(result.choices).toEqual([
      {
        text: 'Once upon a time, a backpack that could talk set out to find its owner.',
        toolCalls: [],
        finishReason: 'stop',
      },
      {
        text: 'The magic backpack hummed softly whenever Lily forgot her homework.',
        toolCalls: [],
        finishReason: 'stop',
      },
    ]);
    expect(result.usage).toEqual({ promptTokens: 10, completionTokens: 31 });
  });

  it('orders the choices by index (a missing index is 0) and reads a blocked candidate as filtered', () => {
    const body = {
      candidates: [
        { content: { parts: [{ text: 'third' }] }, finishReason: 'STOP', index: 2 },
        { finishReason: 'SAFETY', index: 1 },
        { content: { parts: [{ text: 'first' }] }, finishReason: 'STOP' },
      ],
    };
    expect(parse(body, { n: 3 }).choices).toEqual([
      { text: 'first', toolCalls: [], finishReason: 'stop' },
      { text: null, toolCalls: [], finishReason: 'content_filter' },
      { text: 'third', toolCalls: [], finishReason: 'stop' },
    ]);
  });

  it('answers a blocked prompt with one filtered choice per choice asked for', () => {
    const result = parse(fixture('gemini-prompt-blocked.json'), { n: 2, logprobs: { top: undefined } });
    expect(result.choices).toEqual([
      { text: null, toolCalls: [], finishReason: 'content_filter', logprobs: null },
      { text: null, toolCalls: [], finishReason: 'content_filter', logprobs: null },
    ]);
  });
});

describe('gemini response: logprobs', () => {
  it("translates logprobsResult into OpenAI's logprobs, top_logprobs cut to the number asked for", () => {
    const [choice] = parse(fixture('gemini-logprobs.json'), { logprobs: { top: 2 } }).choices;
    expect(choice?.text).toBe('Neutral');
    expect(choice?.logprobs).toEqual({
      content: [
        {
          token: 'Neutral',
          logprob: -0.0926,
          bytes: [78, 101, 117, 116, 114, 97, 108],
          top_logprobs: [
            { token: 'Neutral', logprob: -0.0926, bytes: [78, 101, 117, 116, 114, 97, 108] },
            { token: 'Positive', logprob: -2.4391, bytes: [80, 111, 115, 105, 116, 105, 118, 101] },
          ],
        },
      ],
    });
  });

  it('lists no alternatives without top_logprobs, and no logprobs unless asked for', () => {
    const asked = parse(fixture('gemini-logprobs.json'), { logprobs: { top: undefined } }).choices[0];
    expect(asked?.logprobs).toEqual({
      content: [
        { token: 'Neutral', logprob: -0.0926, bytes: [78, 101, 117, 116, 114, 97, 108], top_logprobs: [] },
      ],
    });
    expect(parse(fixture('gemini-logprobs.json')).choices[0]).not.toHaveProperty('logprobs');
    expect(
      parse(fixture('gemini-two-candidates.json'), { n: 2, logprobs: { top: 1 } }).choices[0]?.logprobs,
    ).toBeNull();
  });

  it('gives the UTF-8 bytes of a token, and reads proto3-omitted zeros as 0 and the empty token', () => {
    expect(
      convertGeminiLogprobs(
        {
          chosenCandidates: [{ token: 'café', logProbability: -0.5 }, {}],
          topCandidates: [{ candidates: [{ token: 'é' }] }],
        },
        5,
      ),
    ).toEqual({
      content: [
        {
          token: 'café',
          logprob: -0.5,
          bytes: [99, 97, 102, 195, 169],
          top_logprobs: [{ token: 'é', logprob: 0, bytes: [195, 169] }],
        },
        { token: '', logprob: 0, bytes: [], top_logprobs: [] },
      ],
    });
  });
});

describe('gemini response: usage', () => {
  it('reports cached prompt tokens and thinking tokens only when Gemini does', () => {
    const body = {
      candidates: [{ content: { parts: [{ text: 'ok' }] }, finishReason: 'STOP' }],
      usageMetadata: {
        promptTokenCount: 2100,
        cachedContentTokenCount: 2048,
        candidatesTokenCount: 3,
        thoughtsTokenCount: 40,
        totalTokenCount: 2143,
      },
    };
    expect(parse(body).usage).toEqual({
      promptTokens: 2100,
      completionTokens: 43,
      cachedPromptTokens: 2048,
      reasoningTokens: 40,
    });
    const plain = { ...body, usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 1 } };
    expect(parse(plain).usage).toStrictEqual({ promptTokens: 5, completionTokens: 1 });
    const malformed = { ...body, usageMetadata: { promptTokenCount: 5, cachedContentTokenCount: -1 } };
    expect(catchError(() => parse(malformed)).kind).toBe('bad_response');
  });
});
