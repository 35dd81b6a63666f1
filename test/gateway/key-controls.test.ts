import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callCostBound, promptSize, promptTokenBound } from '../../src/billing/estimate.js';
import { createServer, type Server } from '../../src/http/server.js';
import type { KeyChanges } from '../../src/store/types.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { TEST_DIALECT } from '../helpers/test-database.js';

/**
 * A key's own controls through the real app (docs/api.md "Key controls"): its spend limit is never
 * overspent, whatever the concurrency and (on PostgreSQL) the number of instances; an expired key, a model
 * or provider outside its allow-list are refused with no upstream call and no charge.
 */

let h: Harness;
let second: Server | undefined;
beforeAll(async () => {
  h = await startHarness({
    simLatencyMs: 5,
    env: { STREAMING: 'on', KEY_MAX_PENDING_BODIES: '0', ADDRESS_MAX_PENDING_BODIES: '0' },
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

describe('refusals of a key control: the error, no upstream call, no charge', () => {
  async function refusedWithoutCharge(
    changes: KeyChanges,
    body: Record<string, unknown>,
    status: number,
    code: string,
    type: string,
  ) {
    const { accountId, key } = await keyWith('5', changes);
    const calls = h.sim.requests('deepseek').length + h.sim.requests('qwen').length;
    const res = await h.chat(body, { key });
    expect(res.status).toBe(status);
    const error = res.body.error as { code: string; type: string; message: string };
    expect(error.code).toBe(code);
    expect(error.type).toBe(type);
    expect(h.sim.requests('deepseek').length + h.sim.requests('qwen').length).toBe(calls);
    expect(await h.balanceNano(accountId)).toBe(5_000_000_000);
    return error.message;
  }

  it('an expired key: 401 key_expired, saying when', async () => {
    const message = await refusedWithoutCharge(
      { expiresAt: Date.now() - 1_000 },
      { provider: 'prov-deepseek', messages },
      401,
      'key_expired',
      'authentication_error',
    );
    expect(message).toMatch(/expired at 20\d\d-/);
  });

  it('a model outside the allow-list: 403 model_not_allowed, naming what the key may use', async () => {
    const message = await refusedWithoutCharge(
      { allowed: ['prov-qwen'] },
      { model: h.config.providers['prov-deepseek'].model, messages },
      403,
      'model_not_allowed',
      'permission_error',
    );
    expect(message).toContain('prov-qwen');
  });

  it('a provider outside the allow-list: 403', async () => {
    await refusedWithoutCharge(
      { allowed: [h.config.providers['prov-qwen'].model] },
      { provider: 'prov-deepseek', messages },
      403,
      'model_not_allowed',
      'permission_error',
    );
  });

  it('auto routing when nothing the key allows is active: 403', async () => {
    await refusedWithoutCharge(
      { allowed: ['no-such-model'] },
      { model: 'auto', messages },
      403,
      'model_not_allowed',
      'permission_error',
    );
  });

  it('auto routing rotates only over what the key allows', async () => {
    const { key } = await keyWith('5', { allowed: ['prov-qwen'] });
    for (let i = 0; i < 4; i++) {
      const res = await h.chat({ model: 'auto', messages }, { key });
      expect(res.status).toBe(200);
      expect((res.body.meta as { provider: string }).provider).toBe('prov-qwen');
    }
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
    expect((body.limits as Record<string, unknown>).tokens_per_minute).toBe(5_000);
  });
});
