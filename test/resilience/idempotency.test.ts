import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Harness, hello, startHarness } from '../helpers/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});
beforeEach(() => {
  h.sim.reset();
});

type Body = { id?: string; error?: { code: string }; meta?: { provider: string; balance: number } };
const upstreamCalls = () =>
  ['deepseek', 'qwen', 'kimi', 'gpt-oss-120b', 'claude'].reduce((n, s) => n + h.sim.requests(s).length, 0);
let seq = 0;
const newKey = () => `idem-${Date.now()}-${seq++}`;

describe('Idempotency-Key', () => {
  it('a retry with the same key and body returns the first answer: no upstream call, no second charge', async () => {
    const key = newKey();
    const first = await h.chat(hello, { headers: { 'idempotency-key': key } });
    expect(first.status).toBe(200);
    const balance = await h.balanceNano();
    const calls = upstreamCalls();
    const again = await h.chat(hello, { headers: { 'idempotency-key': key } });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(upstreamCalls()).toBe(calls);
    expect(await h.balanceNano()).toBe(balance);
    const rows = await h.server.store.listUsage(h.accountId, { limit: 1000 });
    expect(rows.filter((r) => r.requestId === (first.body as Body).id)).toHaveLength(1);
  });

  it('the same key with a different body is refused with 422 and changes nothing', async () => {
    const key = newKey();
    expect((await h.chat(hello, { headers: { 'idempotency-key': key } })).status).toBe(200);
    const balance = await h.balanceNano();
    const other = await h.chat(
      { messages: [{ role: 'user', content: 'Something else' }] },
      { headers: { 'idempotency-key': key } },
    );
    expect(other.status).toBe(422);
    expect((other.body as Body).error?.code).toBe('idempotency_key_reused');
    expect(await h.balanceNano()).toBe(balance);
  });

  it('keys are per account: another account may use the same key', async () => {
    const key = newKey();
    const other = await h.newAccount('1');
    expect((await h.chat(hello, { headers: { 'idempotency-key': key } })).status).toBe(200);
    const res = await h.chat(hello, { key: other.key, headers: { 'idempotency-key': key } });
    expect(res.status).toBe(200);
    expect(res.headers['idempotent-replayed']).toBeUndefined();
  });

  it('while the first request is in flight, a duplicate gets 409 (retryable) and is not served twice', async () => {
    const key = newKey();
    h.sim.setFault('mistral', { kind: 'slow', delayMs: 300 });
    const body = { provider: 'prov-mistral', ...hello };
    const [a, b] = await Promise.all([
      h.chat(body, { headers: { 'idempotency-key': key } }),
      new Promise((r) => setTimeout(r, 50)).then(() => h.chat(body, { headers: { 'idempotency-key': key } })),
    ]);
    expect(a.status).toBe(200);
    expect(b.status).toBe(409);
    expect((b.body as Body).error?.code).toBe('idempotency_in_progress');
    expect(b.headers['x-should-retry']).toBe('true');
    expect(h.sim.requests('mistral')).toHaveLength(1);
    const after = await h.chat(body, { headers: { 'idempotency-key': key } });
    expect(after.body).toEqual(a.body);
  });

  it('a request that failed (nothing charged) can be retried with the same key and is served afresh', async () => {
    const key = newKey();
    h.sim.setFault('llama', { kind: 'status', status: 500, times: 1 });
    const body = { provider: 'prov-llama', ...hello };
    const failed = await h.chat(body, { headers: { 'idempotency-key': key } });
    expect(failed.status).toBe(502);
    const retried = await h.chat(body, { headers: { 'idempotency-key': key } });
    expect(retried.status).toBe(200);
    expect(h.sim.requests('llama')).toHaveLength(2);
  });

  it.each(['has space', '', 'x'.repeat(256), 'naïve'])(
    'an invalid key %j is a 400 invalid_request',
    async (key) => {
      const res = await h.chat(hello, { headers: { 'idempotency-key': key } });
      expect(res.status).toBe(400);
      expect((res.body as Body).error?.code).toBe('invalid_request');
    },
  );

  it('the key is kept in the database, not in process memory', async () => {
    const key = newKey();
    const first = await h.chat(hello, { headers: { 'idempotency-key': key } });
    expect(first.status).toBe(200);
    const begun = await h.server.store.beginIdempotent({
      accountId: h.accountId,
      key,
      bodyHash: 'different',
      requestId: 'chatcmpl-x',
      now: Date.now(),
      lockedUntil: Date.now() + 1000,
      expiresAt: Date.now() + 1000,
    });
    expect(begun.kind).toBe('mismatch');
  });
});
