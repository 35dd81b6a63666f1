import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, hello, startHarness } from '../helpers/harness.js';

type Body = { error?: { code: string; type: string; message: string } };

async function until(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('per-key requests per minute', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ env: { KEY_RATE_LIMIT_RPM: '3' } });
  });
  afterAll(async () => {
    await h.close();
  });

  it('the 4th request within a minute is 429 rate_limit_exceeded with Retry-After; other keys are unaffected', async () => {
    for (let i = 0; i < 3; i++) expect((await h.chat(hello)).status).toBe(200);
    const before = await h.balanceNano();
    const limited = await h.chat(hello);
    expect(limited.status).toBe(429);
    expect((limited.body as Body).error).toMatchObject({
      code: 'rate_limit_exceeded',
      type: 'rate_limit_error',
    });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(20);
    expect(limited.headers['x-should-retry']).toBe('true');
    expect(await h.balanceNano()).toBe(before);
    const other = await h.newAccount('1');
    expect((await h.chat(hello, { key: other.key })).status).toBe(200);
  });

  it('an invalid key is 401, not 429 (auth comes first)', async () => {
    const res = await h.chat(hello, { key: 'sk-svc-00000000000000000000000000000000' });
    expect(res.status).toBe(401);
  });
});

describe('per-key and process-wide concurrency', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ env: { KEY_MAX_CONCURRENT: '2', MAX_CONCURRENT_REQUESTS: '4' } });
  });
  afterAll(async () => {
    await h.close();
  });

  it('a key with 2 requests in flight gets 429 for the 3rd; slots free up when they finish', async () => {
    h.sim.setFault('mistral', { kind: 'slow', delayMs: 300 });
    const slow = { provider: 'prov-mistral', ...hello };
    const seen = h.sim.requests('mistral').length;
    const inFlight = [h.chat(slow), h.chat(slow)];
    // Both are in flight once the upstream has them (not after a fixed time: a cold database pool may
    // take longer than that to authenticate them).
    await until(() => h.sim.requests('mistral').length >= seen + 2);
    const third = await h.chat(slow);
    expect(third.status).toBe(429);
    expect((third.body as Body).error?.code).toBe('rate_limit_exceeded');
    expect((await Promise.all(inFlight)).map((r) => r.status)).toEqual([200, 200]);
    h.sim.setFault('mistral', null);
    expect((await h.chat(slow)).status).toBe(200);
  });

  it('past the process cap new requests are shed at once with 503 service_unavailable', async () => {
    h.sim.setFault('mistral', { kind: 'slow', delayMs: 400 });
    const keys = await Promise.all([h.newAccount('1'), h.newAccount('1')]);
    const slow = { provider: 'prov-mistral', ...hello };
    const inFlight = keys.flatMap((k) => [h.chat(slow, { key: k.key }), h.chat(slow, { key: k.key })]);
    await new Promise((r) => setTimeout(r, 100));
    const started = Date.now();
    const shed = await h.chat(hello);
    expect(Date.now() - started).toBeLessThan(100);
    expect(shed.status).toBe(503);
    expect((shed.body as Body).error?.code).toBe('service_unavailable');
    expect(shed.headers['retry-after']).toBe('1');
    expect((await Promise.all(inFlight)).every((r) => r.status === 200)).toBe(true);
    h.sim.setFault('mistral', null);
    expect((await h.chat(hello)).status).toBe(200);
  });
});
