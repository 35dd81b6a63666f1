import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CODE_FAILURES_PER_ACCOUNT } from '../../src/auth/code-redemption.js';
import { createTopUpBatch, generateTopUpCode } from '../../src/auth/topup-code.js';
import { type Harness, startHarness } from '../helpers/harness.js';

let h: Harness;
let url: string;
const agent = new Agent({ connections: 64 });
beforeAll(async () => {
  h = await startHarness();
  url = await h.server.listen();
});
afterAll(async () => {
  await agent.close();
  await h.close();
});

async function redeem(key: string, body: unknown) {
  const res = await h.server.app.inject({
    method: 'POST',
    url: '/api/v1/credits/redeem',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });
  return { status: res.statusCode, body: res.json() as Record<string, unknown>, headers: res.headers };
}

const codeOf = (body: Record<string, unknown>) => (body.error as { code?: string } | undefined)?.code;

async function batch(usd: number, count: number, expiresAt: number | null = null) {
  return createTopUpBatch(h.server.store, {
    amountNano: usd * 1_000_000_000,
    count,
    expiresAt,
    note: 'test batch',
    createdBy: null,
  });
}

describe('POST /api/v1/credits/redeem', () => {
  it('credits the code once: the answer, the balance and the ledger row with its batch', async () => {
    const user = await h.newAccount('1');
    const { batch: b, codes } = await batch(5, 2);
    const res = await redeem(user.key, { code: codes[0] });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ object: 'credit', amount: 5, balance: 6, batch_id: b.id });
    expect(await h.balanceNano(user.accountId)).toBe(6_000_000_000);
    const credits = await h.server.store.dashboard().recentCredits(user.accountId, 5);
    expect(credits[0]).toMatchObject({ amountNano: 5_000_000_000, batchId: b.id });
    expect(credits[1]).toMatchObject({ batchId: null });

    // Used: by the same account, or another one.
    const other = await h.newAccount('0');
    for (const key of [user.key, other.key]) {
      const again = await redeem(key, { code: codes[0] });
      expect(again.status).toBe(400);
      expect(again.body.error).toMatchObject({
        code: 'invalid_code',
        type: 'invalid_request_error',
        param: 'code',
      });
    }
    expect(await h.balanceNano(other.accountId)).toBe(0);
    // Typed loosely, the second code still redeems.
    const loose = await redeem(other.key, { code: ` ${(codes[1] as string).toLowerCase()} ` });
    expect(loose.status).toBe(200);
    expect((await h.server.store.getCodeBatch(b.id))?.redeemed).toBe(2);
    expect((await h.server.store.ledgerCheck()).ok).toBe(true);
  });

  it('refuses unknown, malformed and expired codes with 400 invalid_code, and a bad body with 400', async () => {
    const user = await h.newAccount('0');
    const expired = await h.server.store.createCodeBatch({
      amountNano: 1_000_000_000,
      note: null,
      expiresAt: Date.now() - 1,
      createdBy: null,
      codes: [{ hash: 'x'.repeat(64), hint: 'tg-…XXXX' }],
    });
    expect(expired.expiresAt).not.toBeNull();
    const { codes: live } = await batch(1, 1, Date.now() + 60_000);
    for (const code of [generateTopUpCode(), 'tg-nope', 'sk-svc-00000000000000000000000000000000']) {
      const res = await redeem(user.key, { code });
      expect(res.status, code).toBe(400);
      expect(codeOf(res.body)).toBe('invalid_code');
    }
    expect((await redeem(user.key, { code: live[0] })).status).toBe(200);
    for (const body of [{}, { code: 5 }, [], { code: 'x'.repeat(201) }]) {
      const res = await redeem(user.key, body);
      expect(res.status).toBe(400);
      expect(codeOf(res.body)).toBe('invalid_request');
    }
    const anonymous = await h.server.app.inject({
      method: 'POST',
      url: '/api/v1/credits/redeem',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ code: live[0] }),
    });
    expect(anonymous.statusCode).toBe(401);
  });

  it('refuses an expired code (its batch past its expiry) without crediting it', async () => {
    const user = await h.newAccount('0');
    const { batch: b, codes } = await batch(1, 1, Date.now() + 200);
    await new Promise((r) => setTimeout(r, 250));
    const res = await redeem(user.key, { code: codes[0] });
    expect(codeOf(res.body)).toBe('invalid_code');
    expect(await h.balanceNano(user.accountId)).toBe(0);
    expect((await h.server.store.getCodeBatch(b.id))?.redeemed).toBe(0);
  });

  it('throttles failed tries per account: 429 too_many_attempts with Retry-After, even for a right code', async () => {
    const user = await h.newAccount('0');
    const { codes } = await batch(1, 1);
    // A redeemed code is no failure: it does not count.
    const { codes: good } = await batch(1, 1);
    expect((await redeem(user.key, { code: good[0] })).status).toBe(200);
    for (let i = 0; i < CODE_FAILURES_PER_ACCOUNT; i++) {
      expect(codeOf((await redeem(user.key, { code: generateTopUpCode() })).body)).toBe('invalid_code');
    }
    const refused = await redeem(user.key, { code: codes[0] });
    expect(refused.status).toBe(429);
    expect(refused.body.error).toMatchObject({ code: 'too_many_attempts', type: 'rate_limit_error' });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(await h.balanceNano(user.accountId)).toBe(1_000_000_000);
    // Another account is not throttled by this one's failures.
    const other = await h.newAccount('0');
    expect((await redeem(other.key, { code: codes[0] })).status).toBe(200);
  });

  it('admits a burst of wrong guesses no further than the limit', async () => {
    const user = await h.newAccount('0');
    const answers = await Promise.all(
      Array.from({ length: 40 }, () => redeem(user.key, { code: generateTopUpCode() })),
    );
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 400)).toHaveLength(CODE_FAILURES_PER_ACCOUNT);
    expect(statuses.filter((s) => s === 429)).toHaveLength(40 - CODE_FAILURES_PER_ACCOUNT);
  });

  it('50 concurrent redemptions of one code over HTTP: exactly one credit, the ledger check clean', async () => {
    const users = await Promise.all(Array.from({ length: 50 }, () => h.newAccount('0')));
    const { batch: b, codes } = await batch(7, 1);
    const answers = await Promise.all(
      users.map(async (u) => {
        const res = await request(`${url}/api/v1/credits/redeem`, {
          method: 'POST',
          dispatcher: agent,
          headers: { authorization: `Bearer ${u.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ code: codes[0] }),
        });
        return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
      }),
    );
    const won = answers.filter((a) => a.status === 200);
    expect(won).toHaveLength(1);
    expect(answers.filter((a) => a.status === 400 && codeOf(a.body) === 'invalid_code')).toHaveLength(49);
    const balances = await Promise.all(users.map((u) => h.balanceNano(u.accountId)));
    expect(balances.filter((n) => n === 7_000_000_000)).toHaveLength(1);
    expect(balances.filter((n) => n === 0)).toHaveLength(49);
    expect((await h.server.store.getCodeBatch(b.id))?.redeemed).toBe(1);
    const report = await h.server.store.ledgerCheck();
    expect(report.problems).toEqual([]);
    expect(report.ok).toBe(true);
  });
});
