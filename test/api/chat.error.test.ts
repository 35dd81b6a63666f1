import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, hello, startHarness } from '../helpers/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ unconfigured: ['prov-gemini'], env: { PROV_LLAMA_ENABLED: 'false' } });
});
afterAll(async () => {
  await h.close();
});

function expectError(
  res: { status: number; body: Record<string, unknown> },
  status: number,
  code: string,
  type?: string,
) {
  expect(res.status).toBe(status);
  const error = res.body.error as Record<string, unknown>;
  expect(error).toBeDefined();
  expect(error.code).toBe(code);
  expect(typeof error.message).toBe('string');
  expect((error.message as string).length).toBeGreaterThan(0);
  expect(typeof error.type).toBe('string');
  if (type) expect(error.type).toBe(type);
  return error;
}

describe('authentication', () => {
  it('401 missing_api_key without an Authorization header', async () => {
    expectError(await h.chat(hello, { key: null }), 401, 'missing_api_key', 'authentication_error');
  });

  it.each(['', 'Basic abc', 'Bearer', 'Bearer ', 'sk-svc-00000000000000000000000000000000', 'Token x'])(
    '401 missing_api_key for a malformed header %j',
    async (header) => {
      expectError(await h.chat(hello, { headers: { authorization: header } }), 401, 'missing_api_key');
    },
  );

  it.each([
    'sk-svc-00000000000000000000000000000000',
    'sk-svc-short',
    'sk-other-00000000000000000000000000000000',
    'sk-svc-zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz',
  ])('401 invalid_api_key "Invalid API key" for %s', async (key) => {
    const error = expectError(await h.chat(hello, { key }), 401, 'invalid_api_key', 'authentication_error');
    expect(error.message).toBe('Invalid API key');
  });

  it('401 invalid_api_key for a revoked key, at once in this process', async () => {
    const { accountId, key } = await h.newAccount('1');
    expect((await h.chat(hello, { key })).status).toBe(200);
    const [info] = await h.server.store.listApiKeys(accountId);
    await h.server.store.revokeApiKey(accountId, info!.id);
    await new Promise((r) => setTimeout(r, h.config.keyCacheTtlMs + 50));
    expectError(await h.chat(hello, { key }), 401, 'invalid_api_key');
  });

  it('authenticates before reading the body: a bad key with bad JSON is 401', async () => {
    expectError(await h.chat(undefined, { key: null, raw: '{nope' }), 401, 'missing_api_key');
  });
});

describe('validation: messages first, then stream', () => {
  it.each([
    ['absent', {}],
    ['empty', { messages: [] }],
    ['null', { messages: null }],
    ['a string', { messages: 'hi' }],
    ['an object', { messages: { role: 'user', content: 'hi' } }],
  ])('400 invalid_messages "Messages array is required" when messages is %s', async (_label, body) => {
    const error = expectError(await h.chat(body), 400, 'invalid_messages', 'invalid_request_error');
    expect(error.message).toBe('Messages array is required');
    expect(error.param).toBe('messages');
  });

  it.each([
    ['an item without role', { messages: [{ content: 'hi' }] }, 'messages[0].role is required.'],
    [
      'an unknown role',
      { messages: [{ role: 'robot', content: 'hi' }] },
      'messages[0].role must be one of "system", "developer", "user", "assistant", "tool", "function"; got "robot".',
    ],
    [
      'a tool message without tool_call_id',
      { messages: [{ role: 'tool', content: 'hi' }] },
      'messages[0].tool_call_id is required: a tool message answers a call.',
    ],
    [
      'a non-string content',
      { messages: [{ role: 'user', content: 5 }] },
      'messages[0].content must be a string or an array of at most 1000 content parts; got 5.',
    ],
    [
      'a null content',
      { messages: [{ role: 'user', content: null }] },
      'messages[0].content is required: a user message needs content.',
    ],
    [
      'an image part in a system message',
      { messages: [{ role: 'system', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] },
      'messages[0].content[0] is of type "image_url"; a system message takes text parts only.',
    ],
    ['a null item', { messages: [null] }, 'messages[0] must be an object with "role"; got null.'],
  ])('400 invalid_messages saying what is wrong when messages has %s', async (_label, body, message) => {
    const error = expectError(await h.chat(body), 400, 'invalid_messages', 'invalid_request_error');
    expect(error.message).toBe(message);
    expect(message.startsWith(`${error.param} `)).toBe(true);
  });

  it('400 invalid_messages naming the part for an image URL that is neither data: nor http(s)', async () => {
    const body = { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] };
    const error = expectError(await h.chat(body), 400, 'invalid_messages', 'invalid_request_error');
    expect(error.message).toBe('messages[0].content[0].image_url.url must be a data: URL or an http(s) URL.');
    expect(error.param).toBe('messages[0].content[0].image_url.url');
  });

  it('400 streaming_not_supported for stream: true', async () => {
    expectError(await h.chat({ ...hello, stream: true }), 400, 'streaming_not_supported');
  });

  it('accepts stream: false', async () => {
    expect((await h.chat({ ...hello, stream: false })).status).toBe(200);
  });

  it('checks messages before stream', async () => {
    expectError(await h.chat({ messages: [], stream: true }), 400, 'invalid_messages');
  });
});

describe('routing errors', () => {
  it('400 invalid_provider for an unknown provider', async () => {
    expectError(await h.chat({ ...hello, provider: 'prov-nope' }), 400, 'invalid_provider');
  });

  it('404 model_not_found for an unknown model', async () => {
    expectError(await h.chat({ ...hello, model: 'gpt-9-ultra' }), 404, 'model_not_found');
  });

  it('400 model_provider_mismatch when model and provider disagree', async () => {
    expectError(
      await h.chat({ ...hello, provider: 'prov-qwen', model: 'prov-kimi' }),
      400,
      'model_provider_mismatch',
    );
    expectError(
      await h.chat({ ...hello, provider: 'prov-qwen', model: h.config.providers['prov-kimi'].model }),
      400,
      'model_provider_mismatch',
    );
  });

  it('503 provider_unavailable for a provider without credentials or disabled', async () => {
    const before = await h.balanceNano();
    expectError(await h.chat({ ...hello, provider: 'prov-gemini' }), 503, 'provider_unavailable');
    expectError(await h.chat({ ...hello, model: 'prov-llama' }), 503, 'provider_unavailable');
    expect(await h.balanceNano()).toBe(before);
  });
});

describe('balance', () => {
  it('402 insufficient_balance asking to add credits, and nothing charged', async () => {
    const { accountId, key } = await h.newAccount('0');
    const error = expectError(
      await h.chat(hello, { key }),
      402,
      'insufficient_balance',
      'insufficient_balance',
    );
    expect(error.message).toMatch(/add credits/i);
    expect(await h.balanceNano(accountId)).toBe(0);
  });

  it('an explicit max_tokens the balance cannot cover → 402 naming the largest max_tokens that fits', async () => {
    const { accountId, key } = await h.newAccount('0.001');
    const res = await h.chat({ ...hello, provider: 'prov-claude', max_tokens: 100_000 }, { key });
    const error = expectError(res, 402, 'insufficient_balance');
    const match = /largest max_tokens that fits is (\d+)/.exec(error.message as string);
    expect(match).not.toBeNull();
    const fits = Number(match![1]);
    expect(await h.balanceNano(accountId)).toBe(1_000_000);
    const ok = await h.chat({ ...hello, provider: 'prov-claude', max_tokens: fits }, { key });
    expect(ok.status).toBe(200);
    const tooMany = await h.chat({ ...hello, provider: 'prov-claude', max_tokens: fits + 50 }, { key });
    expect(tooMany.status).toBe(402);
  });

  it('a low balance without max_tokens is served with a smaller cap instead of 402', async () => {
    // Claude's default cap (4096 × $15/M ≈ $0.061) is more than $0.01 covers.
    const { accountId, key } = await h.newAccount('0.01');
    h.sim.reset();
    const res = await h.chat({ ...hello, provider: 'prov-claude' }, { key });
    expect(res.status).toBe(200);
    const sent = h.sim.requests('claude').at(-1)?.body as { max_tokens: number };
    expect(sent.max_tokens).toBeLessThan(4096);
    expect(sent.max_tokens).toBeGreaterThanOrEqual(h.config.minCompletionTokens);
    expect(await h.balanceNano(accountId)).toBeGreaterThanOrEqual(0);
  });
});

describe('upstream failures: mapped errors, no charge', () => {
  it.each([
    [{ kind: 'status', status: 500 }, 502, 'provider_error'],
    [{ kind: 'status', status: 400, message: 'maximum context length exceeded' }, 400, 'upstream_rejected'],
    [{ kind: 'garbage' }, 502, 'provider_error'],
    [{ kind: 'null' }, 502, 'provider_error'],
    [{ kind: 'no_choices' }, 502, 'provider_error'],
  ])('explicit provider with fault %j → %i %s', async (fault, status, code) => {
    const before = await h.balanceNano();
    h.sim.setFault('mistral', fault as never);
    const res = await h.chat({ ...hello, provider: 'prov-mistral' });
    h.sim.setFault('mistral', null);
    expectError(res, status, code);
    expect(await h.balanceNano()).toBe(before);
    expect(await h.server.store.openHoldsNano(h.accountId)).toBe(0);
    expect(JSON.stringify(res.body)).not.toContain('upstream-secret');
  });

  it('upstream_rejected passes the upstream message on', async () => {
    h.sim.setFault('qwen', {
      kind: 'status',
      status: 400,
      message: 'maximum context length exceeded',
    } as never);
    const res = await h.chat({ ...hello, provider: 'prov-qwen' });
    h.sim.setFault('qwen', null);
    const error = expectError(res, 400, 'upstream_rejected');
    expect(error.message).toContain('maximum context length exceeded');
  });

  it('auto routing fails over to the next provider and bills only the one that served', async () => {
    const auto = ['prov-deepseek', 'prov-qwen', 'prov-kimi', 'prov-gpt-oss-120b'];
    const probe = await h.chat(hello);
    const last = auto.indexOf((probe.body.meta as { provider: string }).provider);
    const failing = auto[(last + 1) % 4] as string;
    const expected = auto[(last + 2) % 4] as string;
    h.sim.setFault(failing.replace('prov-', ''), { kind: 'status', status: 503 } as never);
    const before = await h.balanceNano();
    const res = await h.chat(hello);
    h.sim.reset();
    expect(res.status).toBe(200);
    const meta = res.body.meta as { provider: string; cost: { input: number; output: number } };
    expect(meta.provider).toBe(expected);
    const after = await h.balanceNano();
    expect(before - after).toBe(Math.round(meta.cost.input * 1e9) + Math.round(meta.cost.output * 1e9));
    expect(await h.server.store.openHoldsNano(h.accountId)).toBe(0);
  });

  it('an explicitly chosen provider is never swapped for another', async () => {
    h.sim.setFault('kimi', { kind: 'status', status: 503 } as never);
    const res = await h.chat({ ...hello, provider: 'prov-kimi' });
    h.sim.reset();
    expectError(res, 502, 'provider_error');
  });
});

describe('other routes and methods', () => {
  it('404 in the error shape for an unknown route', async () => {
    const res = await h.server.app.inject({ method: 'GET', url: '/api/v1/nothing-here' });
    expect(res.statusCode).toBe(404);
    expect(JSON.parse(res.body).error.code).toBe('not_found');
  });

  it('405 for GET on the completions route', async () => {
    const res = await h.server.app.inject({
      method: 'GET',
      url: '/api/v1/chat/completions',
      headers: { authorization: `Bearer ${h.key}` },
    });
    expect(res.statusCode).toBe(405);
    expect(JSON.parse(res.body).error.code).toBe('method_not_allowed');
  });

  it('/healthz and /readyz answer', async () => {
    expect((await h.server.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    const ready = await h.server.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(200);
    expect(JSON.parse(ready.body)).toMatchObject({ status: 'ok', database: 'ok' });
  });
});
