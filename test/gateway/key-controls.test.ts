import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messagesErrorType } from '../../src/api/messages/messages-error.js';
import { callCostBound, promptSize, promptTokenBound } from '../../src/billing/estimate.js';
import { createServer, type Server } from '../../src/http/server.js';
import { CATALOG } from '../../src/providers/catalog.js';
import type { KeyChanges } from '../../src/store/types.js';
import { type Harness, slugOf, startHarness } from '../helpers/harness.js';
import { TEST_DIALECT } from '../helpers/test-database.js';

/**
 * A key's own controls through the real app (docs/api.md "Key controls"): its spend limit is never
 * overspent, whatever the concurrency and (on PostgreSQL) the number of instances; an expired key, a model
 * or provider outside its allow-list, a key past its own requests or tokens per minute are refused on
 * every front door with no upstream call and no charge.
 */

let h: Harness;
let second: Server | undefined;
beforeAll(async () => {
  h = await startHarness({
    simLatencyMs: 5,
    env: {
      STREAMING: 'on',
      KEY_MAX_PENDING_BODIES: '0',
      ADDRESS_MAX_PENDING_BODIES: '0',
      // With Redis (PostgreSQL project): the per-minute limits are shared through it, and a loaded test
      // machine must not make an instance give up on it for its own counts (REDIS_TIMEOUT_MS is 50 ms).
      REDIS_TIMEOUT_MS: '5000',
    },
  });
  // PostgreSQL: a second instance on the same database (SQLite is one server per file).
  if (TEST_DIALECT === 'postgres') {
    second = await createServer(h.config, { logger: pino({ level: 'silent' }) });
  }
});
afterAll(async () => {
  await second?.close();
  await h.close();
});

async function keyWith(usd: string, changes: KeyChanges) {
  const { accountId, key } = await h.newAccount(usd);
  const [info] = await h.server.store.listApiKeys(accountId);
  if (!info) throw new Error('no key');
  await h.server.store.updateApiKey(accountId, info.id, changes);
  return { accountId, key, keyId: info.id };
}

function post(server: Server, key: string, body: unknown) {
  return server.app.inject({
    method: 'POST',
    url: '/api/v1/chat/completions',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });
}

const messages = [{ role: 'user' as const, content: 'How much is two plus two?' }];

describe('a key spend limit under concurrency', () => {
  it('200 concurrent calls (half streamed) on a key whose limit pays for 20: at most 20 served, spend ≤ limit', async () => {
    const maxTokens = 20;
    const provider = h.config.providers['prov-deepseek'];
    const plan = {
      prompt: promptSize({ messages }),
      requestedMaxTokens: maxTokens,
      minCompletionTokens: h.config.minCompletionTokens,
      choices: 1,
    };
    const bound = promptTokenBound(plan.prompt, provider);
    h.sim.setFault('deepseek', { kind: 'usage', promptTokens: bound, completionTokens: maxTokens } as never);
    const perCall = callCostBound(provider, plan, maxTokens);
    const limitNano = perCall * 20;
    const { accountId, key, keyId } = await keyWith('1000', { limitNano, limitReset: 'monthly' });
    const before = h.sim.requests('deepseek').length;
    const servers = second ? [h.server, second] : [h.server];
    const responses = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        post(servers[i % servers.length] as Server, key, {
          provider: 'prov-deepseek',
          messages,
          max_tokens: maxTokens,
          ...(i % 2 === 1 ? { stream: true } : {}),
        }),
      ),
    );
    h.sim.setFault('deepseek', null);
    const served = responses.filter((r) => r.statusCode === 200);
    const others = responses.filter((r) => r.statusCode !== 200 && r.statusCode !== 402);
    expect(others.map((r) => `${r.statusCode} ${r.body.slice(0, 200)}`).slice(0, 3)).toEqual([]);
    const refused = responses.filter((r) => r.statusCode === 402);
    expect(served.length).toBeGreaterThan(0);
    expect(served.length).toBeLessThanOrEqual(20);
    expect(served.length + refused.length).toBe(200);
    for (const r of refused) {
      const body = JSON.parse(r.body) as { error: { code: string; message: string } };
      expect(body.error.code).toBe('key_limit_exceeded');
      expect(body.error.message).toMatch(/limit is \$[\d.]+ and \$[\d.]+ is left\. It resets at 20\d\d-/);
    }
    // No upstream call for a refused request.
    expect(h.sim.requests('deepseek').length - before).toBe(served.length);
    const info = await h.server.store.getApiKey(accountId, keyId);
    expect(info?.window.heldNano).toBe(0);
    expect(info?.window.spentNano).toBeLessThanOrEqual(limitNano);
    expect(info?.window.spentNano).toBe((await h.server.store.chargesSince(accountId, [0]))[0]);
    const report = await h.server.store.ledgerCheck();
    expect(report.problems).toEqual([]);
  });
});

type Door = 'chat' | 'messages' | 'responses';
const DOORS: Door[] = ['chat', 'messages', 'responses'];

interface Answer {
  status: number;
  headers: Record<string, unknown>;
  /** The error of a refusal, whatever the door's shape. */
  error: { code: string; type: string; message: string } | undefined;
  body: string;
}

/**
 * One call through a front door: OpenAI chat completions, Anthropic Messages (key as `x-api-key`) or
 * OpenAI Responses, naming `model` (a provider, a model or `auto`).
 */
async function through(
  server: Server,
  door: Door,
  key: string,
  model: string,
  stream = false,
): Promise<Answer> {
  const content = 'How much is two plus two?';
  const [url, headers, body]: [string, Record<string, string>, Record<string, unknown>] =
    door === 'chat'
      ? ['/api/v1/chat/completions', { authorization: `Bearer ${key}` }, { model, messages, max_tokens: 20 }]
      : door === 'messages'
        ? [
            '/api/v1/messages',
            { 'x-api-key': key, 'anthropic-version': '2023-06-01' },
            { model, messages: [{ role: 'user', content }], max_tokens: 20 },
          ]
        : [
            '/api/v1/responses',
            { authorization: `Bearer ${key}` },
            { model, input: content, max_output_tokens: 20 },
          ];
  const res = await server.app.inject({
    method: 'POST',
    url,
    headers: { ...headers, 'content-type': 'application/json' },
    payload: JSON.stringify(stream ? { ...body, stream: true } : body),
  });
  let error: Answer['error'];
  if (res.statusCode !== 200) {
    const parsed = JSON.parse(res.body) as {
      type?: string;
      error: { code: string; type: string; message: string };
    };
    // Anthropic's shape: {"type":"error","error":{type,message,code}}; OpenAI's: {"error":{message,type,code}}.
    if (door === 'messages') expect(parsed.type).toBe('error');
    error = parsed.error;
  }
  return { status: res.statusCode, headers: res.headers, error, body: res.body };
}

/** The calls every simulated upstream has received. */
function upstreamCalls(): number {
  return CATALOG.reduce((sum, entry) => sum + h.sim.requests(slugOf(entry.name)).length, 0);
}

/** The error type each door gives a status (Anthropic's on the Messages door). */
function typeOn(door: Door, status: number): string {
  if (door === 'messages') return messagesErrorType(status);
  return (
    {
      401: 'authentication_error',
      402: 'insufficient_balance',
      403: 'permission_error',
      429: 'rate_limit_error',
    }[status] ?? ''
  );
}

describe('refusals of a key control on every door: the error, no upstream call, no charge', () => {
  async function refusedWithoutCharge(
    door: Door,
    changes: KeyChanges,
    model: string,
    status: number,
    code: string,
  ) {
    const { accountId, key } = await keyWith('5', changes);
    const calls = upstreamCalls();
    for (const stream of [false, true]) {
      const res = await through(h.server, door, key, model, stream);
      expect(res.status, res.body.slice(0, 300)).toBe(status);
      expect(res.error?.code).toBe(code);
      expect(res.error?.type).toBe(typeOn(door, status));
    }
    expect(upstreamCalls()).toBe(calls);
    expect(await h.balanceNano(accountId)).toBe(5_000_000_000);
    expect(await h.server.store.openHoldsNano(accountId)).toBe(0);
    return (await through(h.server, door, key, model)).error?.message ?? '';
  }

  for (const door of DOORS) {
    describe(`the ${door} door`, () => {
      it('an expired key: 401 key_expired, saying when', async () => {
        const message = await refusedWithoutCharge(
          door,
          { expiresAt: Date.now() - 1_000 },
          'prov-deepseek',
          401,
          'key_expired',
        );
        expect(message).toMatch(/expired at 20\d\d-/);
      });

      it('a call its spend limit cannot cover: 402 key_limit_exceeded, saying what is left', async () => {
        const message = await refusedWithoutCharge(
          door,
          { limitNano: 1_000, limitReset: 'daily' },
          'prov-deepseek',
          402,
          'key_limit_exceeded',
        );
        expect(message).toMatch(/limit is \$[\d.]+ and \$[\d.]+ is left\. It resets at 20\d\d-/);
      });

      it('a model outside the allow-list: 403 model_not_allowed, naming what the key may use', async () => {
        const message = await refusedWithoutCharge(
          door,
          { allowed: ['prov-qwen'] },
          h.config.providers['prov-deepseek'].model,
          403,
          'model_not_allowed',
        );
        expect(message).toContain('prov-qwen');
      });

      it('a provider outside the allow-list: 403', async () => {
        await refusedWithoutCharge(
          door,
          { allowed: [h.config.providers['prov-qwen'].model] },
          'prov-deepseek',
          403,
          'model_not_allowed',
        );
      });

      it('auto routing when nothing the key allows is active: 403', async () => {
        await refusedWithoutCharge(door, { allowed: ['no-such-model'] }, 'auto', 403, 'model_not_allowed');
      });
    });
  }

  it('auto routing rotates only over what the key allows', async () => {
    const { key } = await keyWith('5', { allowed: ['prov-qwen'] });
    for (let i = 0; i < 4; i++) {
      const res = await h.chat({ model: 'auto', messages }, { key });
      expect(res.status).toBe(200);
      expect((res.body.meta as { provider: string }).provider).toBe('prov-qwen');
    }
  });
});

/**
 * A key's own requests and tokens per minute (docs/api.md "Key controls"). On PostgreSQL the calls
 * alternate between the two instances, which share the counts through Redis: an instance refuses what
 * only the other one served.
 */
describe("a key's own RPM and TPM on every door: 429 naming the limit, no upstream call, no charge", () => {
  const servers = () => (second ? [h.server, second] : [h.server]);
  const on = (i: number) => servers()[i % servers().length] as Server;

  /** Every door refuses the key now, in its shape, with Retry-After, without reaching an upstream or charging. */
  async function refusedEverywhere(accountId: string, key: string, says: RegExp): Promise<void> {
    const calls = upstreamCalls();
    const balance = await h.balanceNano(accountId);
    let i = 0;
    for (const door of DOORS) {
      for (const stream of [false, true]) {
        const res = await through(on(i++), door, key, 'prov-deepseek', stream);
        expect(res.status, res.body.slice(0, 300)).toBe(429);
        expect(res.error?.code).toBe('rate_limit_exceeded');
        expect(res.error?.type).toBe(typeOn(door, 429));
        expect(res.error?.message).toMatch(says);
        expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
        expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(60);
      }
    }
    expect(upstreamCalls()).toBe(calls);
    expect(await h.balanceNano(accountId)).toBe(balance);
    expect(await h.server.store.openHoldsNano(accountId)).toBe(0);
  }

  for (const door of DOORS) {
    it(`RPM 2: two calls through ${door} (one streamed), then every door refuses`, async () => {
      const { accountId, key } = await keyWith('5', { rpm: 2 });
      expect((await through(on(0), door, key, 'prov-deepseek')).status).toBe(200);
      expect((await through(on(1), door, key, 'prov-deepseek', true)).status).toBe(200);
      await refusedEverywhere(accountId, key, /own limit of 2 requests per minute/);
    });

    it(`TPM: the tokens settled through ${door}, plain and streamed, count; past the limit every door refuses`, async () => {
      // Each call settles 10 + 5 tokens: at 16 per minute the second call is still admitted (15 < 16).
      h.sim.setFault('deepseek', { kind: 'usage', promptTokens: 10, completionTokens: 5 });
      try {
        const { accountId, key } = await keyWith('5', { tpm: 16 });
        expect((await through(on(0), door, key, 'prov-deepseek')).status).toBe(200);
        expect((await through(on(1), door, key, 'prov-deepseek', true)).status).toBe(200);
        await refusedEverywhere(
          accountId,
          key,
          /own limit of 16 tokens per minute is reached: its calls settled 30 tokens/,
        );
      } finally {
        h.sim.setFault('deepseek', null);
      }
    });
  }

  it("a key without limits of its own is not held to another key's", async () => {
    await keyWith('5', { rpm: 1, tpm: 1 });
    const { key } = await keyWith('5', {});
    for (let i = 0; i < 3; i++) expect((await through(on(i), 'chat', key, 'prov-deepseek')).status).toBe(200);
  });
});

describe('GET /api/v1/key reports the key controls', () => {
  it('limit, expiry, allow-list and per-key rates', async () => {
    const expiresAt = Date.UTC(2099, 0, 1);
    const { key } = await keyWith('5', {
      limitNano: 2_000_000_000,
      limitReset: 'never',
      expiresAt,
      allowed: ['prov-qwen'],
      rpm: 7,
      tpm: 5_000,
    });
    const res = await h.server.app.inject({
      method: 'GET',
      url: '/api/v1/key',
      headers: { authorization: `Bearer ${key}` },
    });
    expect(res.statusCode).toBe(200);
    const body = JSON.parse(res.body) as Record<string, unknown>;
    expect(body.limit).toEqual({ amount: 2, remaining: 2, reset: 'never', resets_at: null });
    expect(body.expires_at).toBe(expiresAt / 1000);
    expect(body.allowed).toEqual(['prov-qwen']);
    expect(body.limits).toMatchObject({ requests_per_minute: 7, tokens_per_minute: 5_000 });
  });
});
