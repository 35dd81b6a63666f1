import { describe, expect, it } from 'vitest';
import { geminiAdapter } from '../../src/providers/gemini/index.js';
import { mapGeminiFinishReason } from '../../src/providers/gemini/map-gemini-finish-reason.js';
import type { ChatResult } from '../../src/providers/types.js';
import {
  catchError,
  chatRequest,
  fixture,
  httpResponse,
  jsonBody,
  providerConfig,
  TEST_KEY,
} from './provider-test-helpers.js';

const gemini = providerConfig(
  'prov-gemini',
  'gemini',
  'https://generativelanguage.googleapis.com',
  'gemini-2.5-flash',
);

function generateContent(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    candidates: [{ content: { role: 'model', parts: [{ text: 'ok' }] }, finishReason: 'STOP', index: 0 }],
    usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 1, totalTokenCount: 6 },
    modelVersion: 'gemini-2.5-flash',
    ...overrides,
  };
}

/** Reads `body` (an answer to the plain test conversation) as the adapter would. */
function parse(body: unknown, status = 200): ChatResult {
  return geminiAdapter.parseResponse(gemini, httpResponse(status, body), chatRequest());
}

describe('gemini adapter: request', () => {
  it('POSTs to models/{model}:generateContent with x-goog-api-key, never the key in the URL', () => {
    const req = geminiAdapter.buildRequest(gemini, chatRequest({ model: 'gemini-2.5-flash' }));
    expect(req.url).toBe(
      'https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent',
    );
    expect(req.url).not.toContain(TEST_KEY);
    expect(req.headers).toEqual({
      'x-goog-api-key': TEST_KEY,
      'content-type': 'application/json',
      accept: 'application/json',
    });
    expect(req.dropped).toBeUndefined();
    expect(jsonBody(req.body)).toEqual({
      contents: [
        { role: 'user', parts: [{ text: 'Hi' }] },
        { role: 'model', parts: [{ text: 'Hello.' }] },
        { role: 'user', parts: [{ text: 'Say more.' }] },
      ],
      systemInstruction: { parts: [{ text: 'You are terse.' }] },
      generationConfig: { maxOutputTokens: 256 },
    });
  });

  it('encodes the model name and strips a trailing slash from the base URL', () => {
    const req = geminiAdapter.buildRequest(
      { ...gemini, baseUrl: 'http://127.0.0.1:8080/' },
      chatRequest({ model: 'a/b c' }),
    );
    expect(req.url).toBe('http://127.0.0.1:8080/v1beta/models/a%2Fb%20c:generateContent');
  });

  it('merges same-role turns, joins system messages, and sends a system-only conversation as user text', () => {
    const merged = geminiAdapter.buildRequest(
      gemini,
      chatRequest({
        messages: [
          { role: 'user', content: 'a' },
          { role: 'system', content: 'S1' },
          { role: 'user', content: 'b' },
          { role: 'system', content: 'S2' },
        ],
      }),
    );
    expect(jsonBody(merged.body)).toMatchObject({
      contents: [{ role: 'user', parts: [{ text: 'a\n\nb' }] }],
      systemInstruction: { parts: [{ text: 'S1\n\nS2' }] },
    });
    const systemOnly = jsonBody(
      geminiAdapter.buildRequest(gemini, chatRequest({ messages: [{ role: 'system', content: 'Only me' }] }))
        .body,
    );
    expect(systemOnly).not.toHaveProperty('systemInstruction');
    expect(systemOnly.contents).toEqual([{ role: 'user', parts: [{ text: 'Only me' }] }]);
  });

  it('maps sampling parameters into generationConfig and reports user as dropped', () => {
    const req = geminiAdapter.buildRequest(
      gemini,
      chatRequest({
        params: {
          temperature: 0.1,
          top_p: 0.5,
          stop: ['x'],
          presence_penalty: 0.2,
          frequency_penalty: 0.3,
          seed: 9,
          user: 'u-1',
        },
      }),
    );
    const body = jsonBody(req.body);
    expect(body.generationConfig).toEqual({
      maxOutputTokens: 256,
      temperature: 0.1,
      topP: 0.5,
      stopSequences: ['x'],
      presencePenalty: 0.2,
      frequencyPenalty: 0.3,
      seed: 9,
    });
    expect(JSON.stringify(body)).not.toContain('u-1');
    expect(req.dropped).toEqual(['user']);
  });
});

describe('gemini adapter: recorded answers', () => {
  it('joins the parts, skips thought summaries, and bills thinking as output', () => {
    expect(parse(fixture('gemini-generate-content.json'))).toEqual({
      choices: [{ text: 'Hello! How can I help you today?', toolCalls: [], finishReason: 'stop' }],
      usage: { promptTokens: 9, completionTokens: 10 + 1023, reasoningTokens: 1023 },
      model: 'gemini-2.5-flash',
      reasoning: { texts: ['**Considering the greeting**\n\nThe user said hello.'], opaqueChars: 0 },
    });
  });

  it('reads a candidate whose budget went to thinking as no text cut at the length limit', () => {
    expect(parse(fixture('gemini-max-tokens-no-content.json'))).toEqual({
      choices: [{ text: null, toolCalls: [], finishReason: 'length' }],
      usage: { promptTokens: 12, completionTokens: 99, reasoningTokens: 99 },
      model: 'gemini-2.5-flash',
    });
  });

  it('reads a blocked prompt as an empty content-filtered completion', () => {
    expect(parse(fixture('gemini-prompt-blocked.json'))).toEqual({
      choices: [{ text: null, toolCalls: [], finishReason: 'content_filter' }],
      usage: { promptTokens: 7, completionTokens: 0 },
      model: 'gemini-2.5-flash',
    });
  });
});

describe('gemini adapter: finish reasons', () => {
  it.each([
    ['STOP', 'stop'],
    ['MAX_TOKENS', 'length'],
    ['SAFETY', 'content_filter'],
    ['RECITATION', 'content_filter'],
    ['BLOCKLIST', 'content_filter'],
    ['PROHIBITED_CONTENT', 'content_filter'],
    ['SPII', 'content_filter'],
    ['IMAGE_SAFETY', 'content_filter'],
    ['OTHER', 'stop'],
    ['MALFORMED_FUNCTION_CALL', 'stop'],
    ['FINISH_REASON_UNSPECIFIED', 'stop'],
    [undefined, 'stop'],
  ])('%s → %s', (upstream, ours) => {
    expect(mapGeminiFinishReason(upstream)).toBe(ours);
    const body = generateContent({
      candidates: [{ content: { parts: [{ text: 'x' }] }, finishReason: upstream }],
    });
    expect(parse(body).choices[0]?.finishReason).toBe(ours);
  });
});

describe('gemini adapter: usage', () => {
  it('absent usageMetadata is not reported', () => {
    const body = generateContent();
    delete body.usageMetadata;
    expect(parse(body).usage).toEqual({
      promptTokens: undefined,
      completionTokens: undefined,
    });
  });

  it.each([
    [{ promptTokenCount: -1, candidatesTokenCount: 2 }],
    [{ promptTokenCount: 1, candidatesTokenCount: 2.5 }],
    [{ promptTokenCount: 1, candidatesTokenCount: 2, thoughtsTokenCount: '3' }],
    [[]],
  ])('malformed usageMetadata %j → bad_response', (usageMetadata) => {
    expect(catchError(() => parse(generateContent({ usageMetadata }))).kind).toBe('bad_response');
  });
});

describe('gemini adapter: failures', () => {
  it('no candidates and no block reason is unreadable', () => {
    for (const body of [
      generateContent({ candidates: [] }),
      { modelVersion: 'x' },
      generateContent({ candidates: ['x'] }),
    ]) {
      expect(catchError(() => parse(body)).kind).toBe('bad_response');
    }
  });

  it('a 400 API_KEY_INVALID is the operator credential, not the caller request', () => {
    const error = catchError(() => parse(fixture('gemini-error-invalid-key.json'), 400));
    expect(error).toMatchObject({ kind: 'auth', retryable: false, status: 400 });
    expect(error.message).toContain('API key not valid');
  });

  it('a 400 INVALID_ARGUMENT is a refusal with the upstream message', () => {
    const error = catchError(() => parse(fixture('gemini-error-invalid-argument.json'), 400));
    expect(error.kind).toBe('rejected');
    expect(error.message).toMatch(/^The input token count/);
  });

  it('429 RESOURCE_EXHAUSTED is rate limited', () => {
    const error = catchError(() =>
      geminiAdapter.parseResponse(
        gemini,
        httpResponse(429, fixture('gemini-error-resource-exhausted.json'), { 'retry-after': '30' }),
        chatRequest(),
      ),
    );
    expect(error).toMatchObject({ kind: 'rate_limited', retryAfterMs: 30_000, retryable: true });
  });

  it('404 (unknown model or base URL) is operator misconfiguration; 500 and 503 are server errors', () => {
    const notFound = { error: { code: 404, message: 'models/gemini-9 is not found', status: 'NOT_FOUND' } };
    expect(catchError(() => parse(notFound, 404)).kind).toBe('auth');
    const unavailable = { error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' } };
    expect(catchError(() => parse(unavailable, 503)).kind).toBe('server_error');
    expect(catchError(() => parse([unavailable], 500)).message).toBe(
      'upstream answered HTTP 500: The model is overloaded.',
    );
  });
});
