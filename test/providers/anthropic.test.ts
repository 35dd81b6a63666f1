import { describe, expect, it } from 'vitest';
import { anthropicAdapter } from '../../src/providers/anthropic/index.js';
import { mapAnthropicStopReason } from '../../src/providers/anthropic/map-anthropic-stop-reason.js';
import type { ChatResult, UpstreamHttpResponse } from '../../src/providers/types.js';
import {
  catchError,
  chatRequest,
  fixture,
  httpResponse,
  jsonBody,
  providerConfig,
  TEST_KEY,
} from './provider-test-helpers.js';

const claude = providerConfig('prov-claude', 'anthropic', 'https://api.anthropic.com', 'claude-sonnet-4-5');

/** `parseResponse` of an answer to the default request. */
function parse(response: UpstreamHttpResponse): ChatResult {
  return anthropicAdapter.parseResponse(claude, response, chatRequest());
}

function message(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-5-20250929',
    content: [{ type: 'text', text: 'ok' }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 5, output_tokens: 1 },
    ...overrides,
  };
}

describe('anthropic adapter: request', () => {
  it('POSTs to {baseUrl}/v1/messages with x-api-key and the API version, never a bearer header', () => {
    const req = anthropicAdapter.buildRequest(claude, chatRequest({ model: 'claude-sonnet-4-5' }));
    expect(req.url).toBe('https://api.anthropic.com/v1/messages');
    expect(req.headers).toEqual({
      'x-api-key': TEST_KEY,
      'anthropic-version': '2023-06-01',
      'content-type': 'application/json',
      accept: 'application/json',
    });
    expect(req.headers).not.toHaveProperty('authorization');
    expect(req.dropped).toBeUndefined();
    expect(jsonBody(req.body)).toEqual({
      model: 'claude-sonnet-4-5',
      max_tokens: 256,
      system: 'You are terse.',
      messages: [
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: 'Hello.' },
        { role: 'user', content: 'Say more.' },
      ],
    });
  });

  it('strips a trailing slash from the base URL', () => {
    const proxied = { ...claude, baseUrl: 'http://127.0.0.1:9000/anthropic/' };
    expect(anthropicAdapter.buildRequest(proxied, chatRequest()).url).toBe(
      'http://127.0.0.1:9000/anthropic/v1/messages',
    );
  });

  it('joins every system message wherever it stands and merges consecutive same-role turns', () => {
    const req = anthropicAdapter.buildRequest(
      claude,
      chatRequest({
        messages: [
          { role: 'system', content: 'A' },
          { role: 'user', content: 'one' },
          { role: 'system', content: 'B' },
          { role: 'user', content: 'two' },
          { role: 'assistant', content: 'three' },
          { role: 'assistant', content: 'four' },
        ],
      }),
    );
    expect(jsonBody(req.body)).toMatchObject({
      system: 'A\n\nB',
      messages: [
        { role: 'user', content: 'one\n\ntwo' },
        { role: 'assistant', content: 'three\n\nfour' },
      ],
    });
  });

  it('sends a system-only conversation as one user message', () => {
    const req = anthropicAdapter.buildRequest(
      claude,
      chatRequest({
        messages: [
          { role: 'system', content: 'Tell a joke.' },
          { role: 'system', content: 'Keep it short.' },
        ],
      }),
    );
    const body = jsonBody(req.body);
    expect(body).not.toHaveProperty('system');
    expect(body.messages).toEqual([{ role: 'user', content: 'Tell a joke.\n\nKeep it short.' }]);
  });

  it('translates the parameters it can and reports the ones it drops', () => {
    const req = anthropicAdapter.buildRequest(
      claude,
      chatRequest({
        params: {
          temperature: 0.3,
          stop: ['END'],
          user: 'u-1',
          presence_penalty: 1,
          frequency_penalty: 1,
          seed: 7,
        },
      }),
    );
    const body = jsonBody(req.body);
    expect(body).toMatchObject({ temperature: 0.3, stop_sequences: ['END'], metadata: { user_id: 'u-1' } });
    for (const absent of ['presence_penalty', 'frequency_penalty', 'seed', 'stop', 'user', 'top_p']) {
      expect(body).not.toHaveProperty(absent);
    }
    expect(req.dropped).toEqual(['presence_penalty', 'frequency_penalty', 'seed']);
  });

  it('sends top_p alone, and only temperature (top_p dropped) when both are given', () => {
    const alone = anthropicAdapter.buildRequest(claude, chatRequest({ params: { top_p: 0.8 } }));
    expect(jsonBody(alone.body).top_p).toBe(0.8);
    expect(alone.dropped).toBeUndefined();
    const both = anthropicAdapter.buildRequest(
      claude,
      chatRequest({ params: { temperature: 0.5, top_p: 0.8 } }),
    );
    expect(jsonBody(both.body)).toMatchObject({ temperature: 0.5 });
    expect(jsonBody(both.body)).not.toHaveProperty('top_p');
    expect(both.dropped).toEqual(['top_p']);
  });
});

describe('anthropic adapter: recorded answers', () => {
  it('concatenates the text blocks, skips thinking, and counts cache reads and writes in the prompt, apart', () => {
    expect(parse(httpResponse(200, fixture('anthropic-message.json')))).toEqual({
      choices: [{ text: 'Hi! My name is Claude. How can I help?', toolCalls: [], finishReason: 'stop' }],
      usage: {
        promptTokens: 2095 + 100 + 1000,
        completionTokens: 503,
        cachedPromptTokens: 1000,
        cacheWritePromptTokens: 100,
      },
      model: 'claude-sonnet-4-5-20250929',
      reasoning: { texts: ['The user greets me; answer briefly.'], opaqueChars: 53 },
    });
  });

  it('reads a max_tokens stop with null cache fields', () => {
    expect(parse(httpResponse(200, fixture('anthropic-max-tokens.json')))).toEqual({
      choices: [{ text: 'Once upon a time, in a land far', toolCalls: [], finishReason: 'length' }],
      usage: { promptTokens: 12, completionTokens: 10 },
      model: 'claude-sonnet-4-5-20250929',
    });
  });

  // ChoiceResult.text is null when nothing was said (it was '' before choices existed).
  it('reads an empty content array as no text (null)', () => {
    expect(parse(httpResponse(200, message({ content: [] }))).choices[0]?.text).toBeNull();
  });
});

describe('anthropic adapter: stop reasons', () => {
  it.each([
    ['end_turn', 'stop'],
    ['stop_sequence', 'stop'],
    ['pause_turn', 'stop'],
    ['max_tokens', 'length'],
    ['model_context_window_exceeded', 'length'],
    ['refusal', 'content_filter'],
    ['tool_use', 'tool_calls'],
    ['something_new', 'stop'],
    [null, 'stop'],
  ])('%s → %s', (upstream, ours) => {
    expect(mapAnthropicStopReason(upstream)).toBe(ours);
    expect(parse(httpResponse(200, message({ stop_reason: upstream }))).choices[0]?.finishReason).toBe(ours);
  });
});

describe('anthropic adapter: usage', () => {
  it('absent usage is not reported', () => {
    const body = message();
    delete body.usage;
    expect(parse(httpResponse(200, body)).usage).toEqual({
      promptTokens: undefined,
      completionTokens: undefined,
    });
  });

  it('cache counts without input_tokens do not make a prompt count', () => {
    const body = message({ usage: { cache_read_input_tokens: 50, output_tokens: 3 } });
    expect(parse(httpResponse(200, body)).usage).toEqual({
      promptTokens: undefined,
      completionTokens: 3,
    });
  });

  it.each([
    [{ input_tokens: -3, output_tokens: 1 }],
    [{ input_tokens: 3, output_tokens: 0.5 }],
    [{ input_tokens: 3, output_tokens: 1, cache_read_input_tokens: -1 }],
    [{ input_tokens: 3, output_tokens: true }],
  ])('malformed usage %j → bad_response', (usage) => {
    expect(catchError(() => parse(httpResponse(200, message({ usage })))).kind).toBe('bad_response');
  });
});

describe('anthropic adapter: failures', () => {
  it('a 2xx without a content array is unreadable', () => {
    expect(catchError(() => parse(httpResponse(200, { type: 'message' }))).kind).toBe('bad_response');
    expect(catchError(() => parse(httpResponse(200, 'Overloaded'))).kind).toBe('bad_response');
  });

  it('529 overloaded is a retryable server error', () => {
    const error = catchError(() => parse(httpResponse(529, fixture('anthropic-error-overloaded.json'))));
    expect(error.kind).toBe('server_error');
    expect(error.retryable).toBe(true);
    expect(error.message).toBe('upstream answered HTTP 529: Overloaded');
  });

  it('400 invalid_request_error is a refusal with the upstream message', () => {
    const error = catchError(() => parse(httpResponse(400, fixture('anthropic-error-invalid-request.json'))));
    expect(error.kind).toBe('rejected');
    expect(error.message).toBe('prompt is too long: 215312 tokens > 200000 maximum');
  });

  it('429 reads retry-after as seconds or as an HTTP date', () => {
    const body = { type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } };
    const seconds = catchError(() => parse(httpResponse(429, body, { 'retry-after': '17' })));
    expect(seconds).toMatchObject({ kind: 'rate_limited', retryAfterMs: 17_000 });
    const at = new Date(Date.now() + 60_000).toUTCString();
    const dated = catchError(() => parse(httpResponse(429, body, { 'retry-after': at })));
    expect(dated.retryAfterMs).toBeGreaterThan(55_000);
    expect(dated.retryAfterMs).toBeLessThanOrEqual(60_000);
  });

  it('401 authentication_error is the operator credential', () => {
    const body = { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } };
    const error = catchError(() => parse(httpResponse(401, body)));
    expect(error).toMatchObject({ kind: 'auth', retryable: false, status: 401 });
  });
});
