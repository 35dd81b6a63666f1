import { describe, expect, it } from 'vitest';
import { openaiCompatibleAdapter } from '../../src/providers/openai-compatible/index.js';
import { mapOpenAIFinishReason } from '../../src/providers/openai-compatible/map-openai-finish-reason.js';
import type {
  ChatResult,
  ProviderConfig,
  UpstreamChatRequest,
  UpstreamHttpResponse,
} from '../../src/providers/types.js';
import {
  catchError,
  chatRequest,
  fixture,
  httpResponse,
  jsonBody,
  providerConfig,
  TEST_KEY,
} from './provider-test-helpers.js';

const deepseek = providerConfig(
  'prov-deepseek',
  'openai-compatible',
  'https://api.deepseek.com/v1',
  'deepseek-chat',
);
const groq = providerConfig('prov-gpt-oss-120b', 'openai-compatible', 'https://api.groq.com/openai/v1/', 'x');

/** Reads `response` as the answer to `request` (a plain call unless given). */
function parse(
  provider: ProviderConfig,
  response: UpstreamHttpResponse,
  request: UpstreamChatRequest = chatRequest(),
): ChatResult {
  return openaiCompatibleAdapter.parseResponse(provider, response, request);
}

function completion(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    model: 'deepseek-chat',
    choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 },
    ...overrides,
  };
}

describe('openai-compatible adapter: request', () => {
  it('POSTs the conversation to {baseUrl}/chat/completions with a bearer key', () => {
    const req = openaiCompatibleAdapter.buildRequest(deepseek, chatRequest({ model: 'deepseek-chat' }));
    expect(req.url).toBe('https://api.deepseek.com/v1/chat/completions');
    expect(req.headers).toEqual({
      authorization: `Bearer ${TEST_KEY}`,
      'content-type': 'application/json',
      accept: 'application/json',
    });
    expect(req.dropped).toBeUndefined();
    expect(jsonBody(req.body)).toEqual({
      model: 'deepseek-chat',
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: 'Hello.' },
        { role: 'user', content: 'Say more.' },
      ],
      max_tokens: 256,
      stream: false,
    });
  });

  it("gives each provider its own URL and key, made once and shared by that provider's calls", () => {
    const other = { ...deepseek, apiKey: 'sk-other-provider', baseUrl: 'http://127.0.0.1:9/v1' };
    const first = openaiCompatibleAdapter.buildRequest(deepseek, chatRequest());
    const again = openaiCompatibleAdapter.buildRequest(deepseek, chatRequest({ maxTokens: 9 }));
    const otherReq = openaiCompatibleAdapter.buildRequest(other, chatRequest());
    expect(again.headers).toBe(first.headers);
    expect(Object.isFrozen(first.headers)).toBe(true);
    expect(otherReq.url).toBe('http://127.0.0.1:9/v1/chat/completions');
    expect(otherReq.headers.authorization).toBe('Bearer sk-other-provider');
    expect(first.headers.authorization).toBe(`Bearer ${TEST_KEY}`);
    expect(jsonBody(again.body).max_tokens).toBe(9);
  });

  it('strips a trailing slash from the base URL', () => {
    expect(openaiCompatibleAdapter.buildRequest(groq, chatRequest()).url).toBe(
      'https://api.groq.com/openai/v1/chat/completions',
    );
  });

  it('passes every defined sampling parameter through unchanged, and only those', () => {
    const params = {
      temperature: 0.2,
      top_p: 0.9,
      stop: ['\n\n'],
      presence_penalty: 0.5,
      frequency_penalty: -0.5,
      seed: 42,
      user: 'u-1',
    };
    const body = jsonBody(openaiCompatibleAdapter.buildRequest(deepseek, chatRequest({ params })).body);
    expect(body).toMatchObject(params);
    const partial = jsonBody(
      openaiCompatibleAdapter.buildRequest(deepseek, chatRequest({ params: { seed: 0 } })).body,
    );
    expect(partial.seed).toBe(0);
    expect(Object.keys(partial)).not.toContain('temperature');
  });
});

describe('openai-compatible adapter: recorded answers', () => {
  it('reads a DeepSeek completion', () => {
    expect(parse(deepseek, httpResponse(200, fixture('openai-deepseek-chat.json')))).toEqual({
      choices: [{ text: 'Hello! How can I help you today?', toolCalls: [], finishReason: 'stop' }],
      usage: { promptTokens: 16, completionTokens: 10, cachedPromptTokens: 0 },
      model: 'deepseek-chat',
    });
  });

  it('reads a Groq gpt-oss completion cut at the length limit, ignoring its reasoning', () => {
    const result = parse(groq, httpResponse(200, fixture('openai-groq-gpt-oss-length.json')));
    expect(result.choices[0]?.text).toBe(
      'Fast language models have gained significant attention in recent years due to their ability',
    );
    expect(result.choices[0]?.finishReason).toBe('length');
    expect(result.usage).toEqual({ promptTokens: 18, completionTokens: 16 });
    expect(result.model).toBe('openai/gpt-oss-120b');
  });

  it('joins content given as text parts (Mistral)', () => {
    const result = parse(deepseek, httpResponse(200, fixture('openai-mistral-parts.json')));
    expect(result.choices[0]?.text).toBe('Bonjour! Comment puis-je vous aider?');
    expect(result.usage).toEqual({ promptTokens: 24, completionTokens: 27 });
  });

  it('reads null content as no text, a null finish reason as stop and absent usage as not reported', () => {
    const result = parse(deepseek, httpResponse(200, fixture('openai-qwen-no-usage.json')));
    expect(result).toEqual({
      choices: [{ text: null, toolCalls: [], finishReason: 'stop' }],
      usage: { promptTokens: undefined, completionTokens: undefined },
      model: 'qwen-plus',
    });
  });
});

describe('openai-compatible adapter: finish reasons', () => {
  it.each([
    ['stop', 'stop'],
    ['length', 'length'],
    ['content_filter', 'content_filter'],
    ['tool_calls', 'tool_calls'],
    ['function_call', 'tool_calls'],
    ['insufficient_system_resource', 'stop'],
    [null, 'stop'],
    [undefined, 'stop'],
  ])('%s → %s', (upstream, ours) => {
    expect(mapOpenAIFinishReason(upstream)).toBe(ours);
    const body = completion({ choices: [{ index: 0, message: { content: 'x' }, finish_reason: upstream }] });
    expect(parse(deepseek, httpResponse(200, body)).choices[0]?.finishReason).toBe(ours);
  });
});

describe('openai-compatible adapter: usage', () => {
  it('reports zero counts as zero, not as missing', () => {
    const body = completion({ usage: { prompt_tokens: 0, completion_tokens: 0 } });
    expect(parse(deepseek, httpResponse(200, body)).usage).toEqual({
      promptTokens: 0,
      completionTokens: 0,
    });
  });

  it('keeps a missing field undefined', () => {
    const body = completion({ usage: { prompt_tokens: 7 } });
    expect(parse(deepseek, httpResponse(200, body)).usage).toEqual({
      promptTokens: 7,
      completionTokens: undefined,
    });
  });

  it.each([
    [{ prompt_tokens: -1, completion_tokens: 3 }],
    [{ prompt_tokens: 1.5, completion_tokens: 3 }],
    [{ prompt_tokens: '5', completion_tokens: 3 }],
    [{ prompt_tokens: 5, completion_tokens: 1e300 }],
    ['lots'],
  ])('treats malformed usage %j as an unreadable answer', (usage) => {
    const error = catchError(() => parse(deepseek, httpResponse(200, completion({ usage }))));
    expect(error.kind).toBe('bad_response');
    expect(error.retryable).toBe(true);
  });
});

describe('openai-compatible adapter: unreadable 2xx', () => {
  it.each([
    ['not JSON', '<html>502 Bad Gateway</html>'],
    ['JSON null', 'null'],
    ['a JSON array', '[]'],
    ['no choices', JSON.stringify({ id: 'x', object: 'chat.completion' })],
    ['empty choices', JSON.stringify(completion({ choices: [] }))],
    ['no message', JSON.stringify(completion({ choices: [{ index: 0, finish_reason: 'stop' }] }))],
    ['numeric content', JSON.stringify(completion({ choices: [{ message: { content: 42 } }] }))],
  ])('%s → bad_response', (_label, text) => {
    expect(catchError(() => parse(deepseek, httpResponse(200, text))).kind).toBe('bad_response');
  });
});

describe('openai-compatible adapter: error statuses', () => {
  it('400 is a refusal carrying the upstream message', () => {
    const error = catchError(() =>
      parse(deepseek, httpResponse(400, fixture('openai-error-context-length.json'))),
    );
    expect(error.kind).toBe('rejected');
    expect(error.retryable).toBe(false);
    expect(error.status).toBe(400);
    expect(error.message).toMatch(/^This model's maximum context length is 131072 tokens/);
  });

  it('429 is rate limited, with retry-after-ms taking precedence over retry-after', () => {
    const body = fixture('openai-error-rate-limit.json');
    const both = catchError(() =>
      parse(deepseek, httpResponse(429, body, { 'retry-after-ms': '1750', 'retry-after': '2' })),
    );
    expect(both.kind).toBe('rate_limited');
    expect(both.retryable).toBe(true);
    expect(both.retryAfterMs).toBe(1750);
    expect(both.message).toContain('Rate limit reached');
    const seconds = catchError(() => parse(deepseek, httpResponse(429, body, { 'retry-after': '3' })));
    expect(seconds.retryAfterMs).toBe(3000);
    const none = catchError(() => parse(deepseek, httpResponse(429, body, {})));
    expect(none.retryAfterMs).toBeUndefined();
  });

  it.each([
    [401, 'auth', false],
    [403, 'auth', false],
    [404, 'auth', false],
    [408, 'timeout', true],
    [409, 'rejected', false],
    [422, 'rejected', false],
    [500, 'server_error', true],
    [502, 'server_error', true],
    [503, 'server_error', true],
    [302, 'bad_response', true],
  ])('HTTP %i → %s (retryable %s)', (status, kind, retryable) => {
    const error = catchError(() => parse(deepseek, httpResponse(status, { error: { message: 'nope' } })));
    expect(error.kind).toBe(kind);
    expect(error.retryable).toBe(retryable);
    expect(error.status).toBe(status);
  });

  it('reads the other error shapes compatible upstreams use', () => {
    for (const body of [
      { error: 'plain string' },
      { object: 'error', message: 'plain string' },
      { detail: 'plain string' },
    ]) {
      expect(catchError(() => parse(deepseek, httpResponse(400, body))).message).toBe('plain string');
    }
    const html = catchError(() => parse(deepseek, httpResponse(400, '<html>no</html>')));
    expect(html.message).toBe('upstream rejected the request (HTTP 400)');
  });

  it('truncates long upstream messages and never repeats the API key', () => {
    const long = catchError(() =>
      parse(deepseek, httpResponse(400, { error: { message: 'x'.repeat(5000) } })),
    );
    expect(long.message.length).toBeLessThanOrEqual(300);
    const echoed = catchError(() =>
      parse(deepseek, httpResponse(401, { error: { message: `Incorrect API key provided: ${TEST_KEY}` } })),
    );
    expect(echoed.kind).toBe('auth');
    expect(echoed.message).not.toContain(TEST_KEY);
    expect(echoed.message).toContain('[redacted]');
  });
});
