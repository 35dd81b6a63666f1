import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { Agent, request } from 'node:http';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator, type WireFormat } from '../../src/simulator/index.js';

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator();
});
afterAll(async () => {
  await sim.close();
});
beforeEach(() => {
  sim.reset();
});

type Json = Record<string, unknown>;

const AUTH: Record<WireFormat, Record<string, string>> = {
  'openai-compatible': { authorization: 'Bearer sk-test' },
  anthropic: { 'x-api-key': 'sk-ant-test', 'anthropic-version': '2023-06-01' },
  gemini: { 'x-goog-api-key': 'goog-test' },
};

function endpoint(format: WireFormat, slug: string, model = 'gemini-test'): string {
  const base = sim.baseUrl(format, slug);
  if (format === 'openai-compatible') return `${base}/chat/completions`;
  if (format === 'anthropic') return `${base}/v1/messages`;
  return `${base}/v1beta/models/${model}:generateContent`;
}

/** A minimal valid body per format with one user message. */
function bodyFor(format: WireFormat, text = 'Hello there', cap?: number): Json {
  if (format === 'openai-compatible') {
    return {
      model: 'oa-model',
      messages: [{ role: 'user', content: text }],
      ...(cap ? { max_tokens: cap } : {}),
    };
  }
  if (format === 'anthropic') {
    return { model: 'claude-test', max_tokens: cap ?? 1024, messages: [{ role: 'user', content: text }] };
  }
  return {
    contents: [{ role: 'user', parts: [{ text }] }],
    ...(cap ? { generationConfig: { maxOutputTokens: cap } } : {}),
  };
}

async function call(
  format: WireFormat,
  slug: string,
  body: unknown,
  options: { headers?: Record<string, string>; signal?: AbortSignal; url?: string } = {},
): Promise<{ status: number; headers: Headers; body: Json; text: string }> {
  const res = await fetch(options.url ?? endpoint(format, slug), {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(options.headers ?? AUTH[format]) },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const text = await res.text();
  let parsed: Json = {};
  try {
    parsed = JSON.parse(text) as Json;
  } catch {
    // not JSON
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

const FORMATS: WireFormat[] = ['openai-compatible', 'anthropic', 'gemini'];

/** Reply text, finish reason and usage of a success body, whatever the format. */
function summary(
  format: WireFormat,
  body: Json,
): { text: string; finish: string; prompt: number; completion: number } {
  if (format === 'openai-compatible') {
    const b = body as {
      choices: Array<{ message: { content: string }; finish_reason: string }>;
      usage: { prompt_tokens: number; completion_tokens: number };
    };
    const choice = b.choices[0]!;
    return {
      text: choice.message.content,
      finish: choice.finish_reason,
      prompt: b.usage.prompt_tokens,
      completion: b.usage.completion_tokens,
    };
  }
  if (format === 'anthropic') {
    const b = body as {
      content: Array<{ text: string }>;
      stop_reason: string;
      usage: { input_tokens: number; output_tokens: number };
    };
    return {
      text: b.content[0]!.text,
      finish: b.stop_reason,
      prompt: b.usage.input_tokens,
      completion: b.usage.output_tokens,
    };
  }
  const b = body as {
    candidates: Array<{ content: { parts: Array<{ text: string }> }; finishReason: string }>;
    usageMetadata: { promptTokenCount: number; candidatesTokenCount: number };
  };
  const candidate = b.candidates[0]!;
  return {
    text: candidate.content.parts[0]!.text,
    finish: candidate.finishReason,
    prompt: b.usageMetadata.promptTokenCount,
    completion: b.usageMetadata.candidatesTokenCount,
  };
}

describe('success bodies', () => {
  it('openai-compatible: chat.completion shape, usage from o200k', async () => {
    const res = await call('openai-compatible', 'deepseek', {
      model: 'deepseek-chat',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: [{ type: 'text', text: 'Hello' }] },
      ],
      temperature: 0.5,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('application/json');
    const body = res.body as {
      id: string;
      object: string;
      created: number;
      model: string;
      choices: Array<{
        index: number;
        message: { role: string; content: string; refusal: null };
        logprobs: null;
      }>;
      usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
      system_fingerprint: string;
    };
    expect(body.id).toMatch(/^chatcmpl-/);
    expect(body.object).toBe('chat.completion');
    expect(Number.isInteger(body.created)).toBe(true);
    expect(body.model).toBe('deepseek-chat');
    expect(body.system_fingerprint).toBe('fp_sim');
    expect(body.choices[0]).toMatchObject({
      index: 0,
      message: { role: 'assistant', refusal: null },
      logprobs: null,
    });
    const s = summary('openai-compatible', res.body);
    expect(s.text).toContain('Simulated reply from deepseek to: Hello');
    expect(s.finish).toBe('stop');
    expect(s.prompt).toBe(countTokens('Be brief.') + countTokens('Hello') + 4 * 2 + 3);
    expect(s.completion).toBe(countTokens(s.text));
    expect(s.completion).toBeGreaterThan(40);
    expect(body.usage.total_tokens).toBe(s.prompt + s.completion);
  });

  it('anthropic: message shape, top-level system counted, consecutive same roles accepted', async () => {
    const res = await call('anthropic', 'claude', {
      model: 'claude-x',
      max_tokens: 500,
      system: [{ type: 'text', text: 'You are a pirate.' }],
      messages: [
        { role: 'user', content: 'Hi' },
        { role: 'user', content: [{ type: 'text', text: 'Where is the treasure?' }] },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'claude-x',
      stop_sequence: null,
    });
    expect(res.body.id).toMatch(/^msg_/);
    const s = summary('anthropic', res.body);
    expect(s.finish).toBe('end_turn');
    expect(s.text).toContain('Simulated reply from claude to: Where is the treasure?');
    expect(s.prompt).toBe(
      countTokens('You are a pirate.') +
        countTokens('Hi') +
        countTokens('Where is the treasure?') +
        4 * 3 +
        3,
    );
    expect(s.completion).toBe(countTokens(s.text));
  });

  it('gemini: candidates shape, model from the path, key in the query accepted', async () => {
    const res = await call(
      'gemini',
      'gemini',
      {
        systemInstruction: { parts: [{ text: 'Be kind.' }] },
        contents: [
          { role: 'user', parts: [{ text: 'Hello' }] },
          { role: 'model', parts: [{ text: 'Hi!' }] },
          { role: 'user', parts: [{ text: 'How are you?' }] },
        ],
        generationConfig: { temperature: 0.2, topP: 0.9, maxOutputTokens: 300 },
      },
      { headers: {}, url: `${endpoint('gemini', 'gemini', 'gemini-2.5-flash')}?key=abc` },
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ modelVersion: 'gemini-2.5-flash' });
    expect(typeof res.body.responseId).toBe('string');
    expect(res.body.candidates).toMatchObject([{ content: { role: 'model' }, index: 0 }]);
    const s = summary('gemini', res.body);
    expect(s.finish).toBe('STOP');
    expect(s.text).toContain('Simulated reply from gemini to: How are you?');
    expect(s.prompt).toBe(
      countTokens('Be kind.') +
        countTokens('Hello') +
        countTokens('Hi!') +
        countTokens('How are you?') +
        4 * 4 +
        3,
    );
    const meta = res.body.usageMetadata as { totalTokenCount: number };
    expect(meta.totalTokenCount).toBe(s.prompt + s.completion);
  });

  it('replies are deterministic for the same prompt', async () => {
    const a = await call('openai-compatible', 'qwen', bodyFor('openai-compatible', 'same prompt'));
    const b = await call('openai-compatible', 'qwen', bodyFor('openai-compatible', 'same prompt'));
    expect(summary('openai-compatible', a.body).text).toBe(summary('openai-compatible', b.body).text);
  });

  it.each([
    ['openai-compatible', 'length'],
    ['anthropic', 'max_tokens'],
    ['gemini', 'MAX_TOKENS'],
  ] as const)('%s: a cap below the reply truncates by tokens → %s', async (format, finish) => {
    const res = await call(format, 'trunc', bodyFor(format, 'Write a long essay', 5));
    expect(res.status).toBe(200);
    const s = summary(format, res.body);
    expect(s.finish).toBe(finish);
    expect(s.completion).toBeLessThanOrEqual(5);
    expect(s.completion).toBe(countTokens(s.text));
    expect(s.text.length).toBeGreaterThan(0);
  });

  it('openai max_completion_tokens wins over max_tokens', async () => {
    const res = await call('openai-compatible', 'x', {
      ...bodyFor('openai-compatible', 'hi', 1000),
      max_completion_tokens: 3,
    });
    expect(summary('openai-compatible', res.body).completion).toBeLessThanOrEqual(3);
    expect(summary('openai-compatible', res.body).finish).toBe('length');
  });

  it('stop sequences cut the text', async () => {
    const oa = await call('openai-compatible', 'kimi', { ...bodyFor('openai-compatible'), stop: ['kimi'] });
    expect(summary('openai-compatible', oa.body)).toMatchObject({
      text: 'Simulated reply from ',
      finish: 'stop',
    });
    const an = await call('anthropic', 'claude', {
      ...bodyFor('anthropic'),
      stop_sequences: ['NOPE', 'reply'],
    });
    expect(an.body).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: 'reply' });
    expect(summary('anthropic', an.body).text).toBe('Simulated ');
    const ge = await call('gemini', 'gemini', {
      ...bodyFor('gemini'),
      generationConfig: { stopSequences: ['from'] },
    });
    expect(summary('gemini', ge.body)).toMatchObject({ text: 'Simulated reply ', finish: 'STOP' });
  });
});

describe('authentication', () => {
  it('openai: missing bearer → 401 authentication_error', async () => {
    const res = await call('openai-compatible', 'deepseek', bodyFor('openai-compatible'), { headers: {} });
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ error: { type: 'authentication_error', param: null } });
    expect(typeof (res.body.error as Json).message).toBe('string');
  });

  it('anthropic: missing x-api-key → 401, missing anthropic-version → 400', async () => {
    const noKey = await call('anthropic', 'claude', bodyFor('anthropic'), {
      headers: { 'anthropic-version': '2023-06-01' },
    });
    expect(noKey.status).toBe(401);
    expect(noKey.body).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    const noVersion = await call('anthropic', 'claude', bodyFor('anthropic'), {
      headers: { 'x-api-key': 'k' },
    });
    expect(noVersion.status).toBe(400);
    expect(noVersion.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
  });

  it('gemini: no key → 401 UNAUTHENTICATED', async () => {
    const res = await call('gemini', 'gemini', bodyFor('gemini'), { headers: {} });
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ error: { code: 401, status: 'UNAUTHENTICATED' } });
  });
});

describe('validation', () => {
  it.each([
    ['no model', { messages: [{ role: 'user', content: 'x' }] }],
    ['empty messages', { model: 'm', messages: [] }],
    ['bad role', { model: 'm', messages: [{ role: 'robot', content: 'x' }] }],
    ['bad content', { model: 'm', messages: [{ role: 'user', content: [{ type: 'image_url' }] }] }],
    ['zero max_tokens', { model: 'm', messages: [{ role: 'user', content: 'x' }], max_tokens: 0 }],
    [
      'fractional max_completion_tokens',
      { model: 'm', messages: [{ role: 'user', content: 'x' }], max_completion_tokens: 1.5 },
    ],
    ['not JSON', '{"model":'],
  ])('openai: %s → 400', async (_name, body) => {
    const res = await call('openai-compatible', 'v', body);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: { type: 'invalid_request_error' } });
  });

  it.each([
    ['no max_tokens', { model: 'm', messages: [{ role: 'user', content: 'x' }] }],
    ['system role in messages', { model: 'm', max_tokens: 10, messages: [{ role: 'system', content: 'x' }] }],
    [
      'bad system',
      { model: 'm', max_tokens: 10, system: [{ text: 'x' }], messages: [{ role: 'user', content: 'x' }] },
    ],
    ['no model', { max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }],
    ['empty messages', { model: 'm', max_tokens: 10, messages: [] }],
  ])('anthropic: %s → 400', async (_name, body) => {
    const res = await call('anthropic', 'v', body);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
  });

  it.each([
    ['no contents', {}],
    ['assistant role', { contents: [{ role: 'assistant', parts: [{ text: 'x' }] }] }],
    ['no parts', { contents: [{ role: 'user', parts: [] }] }],
    [
      'bad maxOutputTokens',
      { contents: [{ role: 'user', parts: [{ text: 'x' }] }], generationConfig: { maxOutputTokens: -1 } },
    ],
    [
      'bad systemInstruction',
      { contents: [{ role: 'user', parts: [{ text: 'x' }] }], systemInstruction: 'x' },
    ],
  ])('gemini: %s → 400 INVALID_ARGUMENT', async (_name, body) => {
    const res = await call('gemini', 'v', body);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: { code: 400, status: 'INVALID_ARGUMENT' } });
  });
});

describe('recording and routing', () => {
  it('records every request for the slug, failing ones included, oldest first', async () => {
    await call('openai-compatible', 'llama', bodyFor('openai-compatible', 'first'));
    await call('openai-compatible', 'llama', bodyFor('openai-compatible', 'second'), { headers: {} });
    await call('openai-compatible', 'llama', 'not json');
    const recorded = sim.requests('llama');
    expect(recorded).toHaveLength(3);
    expect(recorded[0]?.path).toBe('/openai/llama/v1/chat/completions');
    expect(recorded[0]?.headers.authorization).toBe('Bearer sk-test');
    expect((recorded[0]?.body as { messages: Array<{ content: string }> }).messages[0]?.content).toBe(
      'first',
    );
    expect(recorded[1]?.headers.authorization).toBeUndefined();
    expect(recorded[2]?.body).toBe('not json');
    expect(sim.requests('other')).toEqual([]);
  });

  it('gemini path without the query string; any slug works', async () => {
    const slug = 'gpt-oss-120b';
    await call('gemini', slug, bodyFor('gemini'), {
      url: `${endpoint('gemini', slug, 'g-1')}?key=k`,
      headers: {},
    });
    expect(sim.requests(slug)[0]?.path).toBe(`/gemini/${slug}/v1beta/models/g-1:generateContent`);
  });

  it('unknown paths → 404 JSON', async () => {
    const res = await fetch(`${sim.url}/nowhere`, { method: 'POST', body: '{}' });
    expect(res.status).toBe(404);
    expect(((await res.json()) as Json).error).toBeDefined();
    const wrong = await call('anthropic', 'claude', bodyFor('anthropic'), {
      url: `${sim.baseUrl('anthropic', 'claude')}/v1/complete`,
    });
    expect(wrong.status).toBe(404);
    expect(wrong.body).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
  });

  it('bodies over 8 MiB → 413', async () => {
    const big = JSON.stringify({
      model: 'm',
      messages: [{ role: 'user', content: 'x'.repeat(8 * 1024 * 1024 + 10) }],
    });
    const res = await call('openai-compatible', 'big', big);
    expect(res.status).toBe(413);
    expect(sim.requests('big')).toHaveLength(1);
  });

  it('keeps connections alive', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const url = new URL(endpoint('openai-compatible', 'ka'));
    const once1 = () =>
      new Promise<boolean>((resolve, reject) => {
        const req = request(
          url,
          {
            method: 'POST',
            agent,
            headers: { ...AUTH['openai-compatible'], 'content-type': 'application/json' },
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve(req.reusedSocket));
          },
        );
        req.on('error', reject);
        req.end(JSON.stringify(bodyFor('openai-compatible')));
      });
    expect(await once1()).toBe(false);
    expect(await once1()).toBe(true);
    agent.destroy();
  });
});

describe('faults', () => {
  it('hang: the request never answers; close() still returns promptly', async () => {
    const own = await startSimulator();
    own.setFault('deepseek', { kind: 'hang' });
    const url = `${own.baseUrl('openai-compatible', 'deepseek')}/chat/completions`;
    const started = Date.now();
    await expect(
      fetch(url, {
        method: 'POST',
        headers: AUTH['openai-compatible'],
        body: JSON.stringify(bodyFor('openai-compatible')),
        signal: AbortSignal.timeout(200),
      }),
    ).rejects.toThrow();
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    // a second hung request still open while closing
    const pending = fetch(url, {
      method: 'POST',
      headers: AUTH['openai-compatible'],
      body: JSON.stringify(bodyFor('openai-compatible')),
    }).catch((err: unknown) => err);
    await new Promise((r) => setTimeout(r, 50));
    const closing = Date.now();
    await own.close();
    expect(Date.now() - closing).toBeLessThan(1000);
    expect(await pending).toBeInstanceOf(Error);
    expect(own.requests('deepseek')).toHaveLength(2);
  });

  it('reset: 200 headers, then the body breaks off', async () => {
    sim.setFault('mistral', { kind: 'reset' });
    const res = await fetch(endpoint('openai-compatible', 'mistral'), {
      method: 'POST',
      headers: AUTH['openai-compatible'],
      body: JSON.stringify(bodyFor('openai-compatible')),
    });
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();
  });

  it.each([
    ['openai-compatible', 429, { error: { type: 'rate_limit_error', message: 'slow down' } }],
    ['openai-compatible', 500, { error: { type: 'server_error' } }],
    ['anthropic', 529, { type: 'error', error: { type: 'overloaded_error' } }],
    ['anthropic', 429, { type: 'error', error: { type: 'rate_limit_error' } }],
    ['anthropic', 500, { type: 'error', error: { type: 'api_error' } }],
    ['gemini', 503, { error: { code: 503, status: 'UNAVAILABLE' } }],
    ['gemini', 429, { error: { code: 429, status: 'RESOURCE_EXHAUSTED' } }],
    ['gemini', 403, { error: { code: 403, status: 'PERMISSION_DENIED' } }],
  ] as const)('status: %s %i in the format error shape', async (format, status, shape) => {
    sim.setFault('s', { kind: 'status', status, message: 'slow down', retryAfter: 7 });
    const res = await call(format, 's', bodyFor(format));
    expect(res.status).toBe(status);
    expect(res.body).toMatchObject(shape);
    expect(res.headers.get('retry-after')).toBe('7');
  });

  it('garbage: 200 json content-type, body not JSON', async () => {
    sim.setFault('g', { kind: 'garbage' });
    const res = await call('openai-compatible', 'g', bodyFor('openai-compatible'));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('application/json');
    expect(() => JSON.parse(res.text)).toThrow();
  });

  it('null: 200 with body null', async () => {
    sim.setFault('n', { kind: 'null' });
    const res = await call('gemini', 'n', bodyFor('gemini'));
    expect(res.status).toBe(200);
    expect(res.text).toBe('null');
  });

  it('no_choices per format', async () => {
    for (const format of FORMATS) sim.setFault(format, { kind: 'no_choices' });
    const oa = await call('openai-compatible', 'openai-compatible', bodyFor('openai-compatible'));
    expect(oa.status).toBe(200);
    expect(oa.body).toMatchObject({ object: 'chat.completion', model: 'oa-model' });
    expect(oa.body.choices).toBeUndefined();
    expect(oa.body.usage).toBeDefined();
    const an = await call('anthropic', 'anthropic', bodyFor('anthropic'));
    expect(an.body).toMatchObject({ type: 'message' });
    expect(an.body.content).toBeUndefined();
    const ge = await call('gemini', 'gemini', bodyFor('gemini'));
    expect(Object.keys(ge.body)).toEqual(['usageMetadata']);
  });

  it.each(FORMATS)('no_usage (%s): a normal answer without usage', async (format) => {
    sim.setFault('u', { kind: 'no_usage' });
    const res = await call(format, 'u', bodyFor(format));
    expect(res.status).toBe(200);
    expect(res.body.usage).toBeUndefined();
    expect(res.body.usageMetadata).toBeUndefined();
    expect(res.text).toContain('Simulated reply from u');
  });

  it.each(FORMATS)('usage (%s): reports the given numbers', async (format) => {
    sim.setFault('u', { kind: 'usage', promptTokens: 1234, completionTokens: 0 });
    const res = await call(format, 'u', bodyFor(format));
    const s = summary(format, res.body);
    expect(s.prompt).toBe(1234);
    expect(s.completion).toBe(0);
    expect(s.text).toContain('Simulated reply');
  });

  it('slow: answers after delayMs', async () => {
    sim.setFault('slow', { kind: 'slow', delayMs: 150 });
    const started = Date.now();
    const res = await call('anthropic', 'slow', bodyFor('anthropic'));
    expect(res.status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
  });

  it('times: applies to that many requests, then clears; auth failures do not count', async () => {
    sim.setFault('t', { kind: 'status', status: 503, times: 2 });
    await call('openai-compatible', 't', bodyFor('openai-compatible'), { headers: {} });
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++)
      statuses.push((await call('openai-compatible', 't', bodyFor('openai-compatible'))).status);
    expect(statuses).toEqual([503, 503, 200]);
  });

  it('faults are per slug; null clears', async () => {
    sim.setFault('a', { kind: 'status', status: 500 });
    expect((await call('openai-compatible', 'b', bodyFor('openai-compatible'))).status).toBe(200);
    expect((await call('openai-compatible', 'a', bodyFor('openai-compatible'))).status).toBe(500);
    sim.setFault('a', null);
    expect((await call('openai-compatible', 'a', bodyFor('openai-compatible'))).status).toBe(200);
  });

  it('setLatency delays normal answers; reset restores the start value', async () => {
    sim.setLatency(150);
    let started = Date.now();
    await call('openai-compatible', 'lat', bodyFor('openai-compatible'));
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    sim.reset();
    started = Date.now();
    await call('openai-compatible', 'lat', bodyFor('openai-compatible'));
    expect(Date.now() - started).toBeLessThan(140);
  });
});

describe('control API', () => {
  async function control(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: Json }> {
    const res = await fetch(`${sim.url}${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, body: (await res.json()) as Json };
  }

  it('health, fault, requests, latency, reset', async () => {
    expect(await control('GET', '/__sim/health')).toEqual({ status: 200, body: { ok: true } });
    expect(
      (await control('POST', '/__sim/fault', { slug: 'c', fault: { kind: 'status', status: 502, times: 1 } }))
        .status,
    ).toBe(200);
    expect((await call('openai-compatible', 'c', bodyFor('openai-compatible'))).status).toBe(502);
    expect((await call('openai-compatible', 'c', bodyFor('openai-compatible'))).status).toBe(200);
    const recorded = await control('GET', '/__sim/requests?slug=c');
    expect((recorded.body.requests as unknown[]).length).toBe(2);
    expect((await control('POST', '/__sim/latency', { ms: 120 })).status).toBe(200);
    const started = Date.now();
    await call('openai-compatible', 'c', bodyFor('openai-compatible'));
    expect(Date.now() - started).toBeGreaterThanOrEqual(110);
    await control('POST', '/__sim/fault', { slug: 'c', fault: { kind: 'garbage' } });
    expect((await control('POST', '/__sim/reset')).status).toBe(200);
    expect(sim.requests('c')).toEqual([]);
    const fast = Date.now();
    expect((await call('openai-compatible', 'c', bodyFor('openai-compatible'))).status).toBe(200);
    expect(Date.now() - fast).toBeLessThan(110);
  });

  it('rejects malformed control calls', async () => {
    expect((await control('POST', '/__sim/fault', { slug: 'c', fault: { kind: 'bogus' } })).status).toBe(400);
    expect((await control('POST', '/__sim/fault', { fault: null })).status).toBe(400);
    expect((await control('POST', '/__sim/latency', { ms: -1 })).status).toBe(400);
    expect((await control('GET', '/__sim/requests')).status).toBe(400);
    expect((await control('GET', '/__sim/nothing')).status).toBe(404);
    expect((await control('POST', '/__sim/fault', { slug: 'c', fault: null })).status).toBe(200);
  });
});

describe('standalone entry', () => {
  it('prints {"url"} and exits on SIGTERM', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/simulator/main.ts', '--latency-ms', '0'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const line = await new Promise<string>((resolve, reject) => {
      let buffered = '';
      child.stdout.on('data', (chunk: Buffer) => {
        buffered += chunk.toString('utf8');
        const newline = buffered.indexOf('\n');
        if (newline !== -1) resolve(buffered.slice(0, newline));
      });
      child.once('exit', (code) => reject(new Error(`exited early with ${code}`)));
    });
    const { url } = JSON.parse(line) as { url: string };
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const health = await fetch(`${url}/__sim/health`);
    expect(await health.json()).toEqual({ ok: true });
    child.kill('SIGTERM');
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).toBe(0);
  });
});
