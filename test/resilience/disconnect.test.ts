import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/harness.js';

let h: Harness;
let url: string;
beforeAll(async () => {
  h = await startHarness();
  url = await h.server.listen();
});
afterAll(async () => {
  await h.close();
});

/** Sends a completion request over a real socket and destroys it after `abortAfterMs`. */
function sendAndLeave(body: unknown, abortAfterMs: number): Promise<void> {
  return new Promise((resolve) => {
    const req = request(`${url}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${h.key}`, 'content-type': 'application/json' },
    });
    req.on('error', () => resolve());
    req.on('response', () => resolve());
    req.end(JSON.stringify(body));
    setTimeout(() => {
      req.destroy();
      resolve();
    }, abortAfterMs);
  });
}

async function until<T>(probe: () => Promise<T | undefined>, timeoutMs = 5000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('client disconnects', () => {
  it('the upstream call completes, its actual usage is billed, and the usage row says the client left', async () => {
    h.sim.setFault('mistral', { kind: 'slow', delayMs: 500 });
    const before = await h.balanceNano();
    const calls = h.sim.requests('mistral').length;
    await sendAndLeave(
      { provider: 'prov-mistral', messages: [{ role: 'user', content: 'I will not wait' }] },
      150,
    );
    const row = await until(async () => {
      const rows = await h.server.store.listUsage(h.accountId, { limit: 10 });
      return rows.find((r) => r.provider === 'prov-mistral' && r.status === 'ok');
    });
    expect(h.sim.requests('mistral').length).toBe(calls + 1);
    expect(row.clientGone).toBe(true);
    expect(row.completionTokens).toBeGreaterThan(0);
    const cost = row.inputCostNano + row.outputCostNano;
    expect(cost).toBeGreaterThan(0);
    expect(await h.balanceNano()).toBe(before - cost);
    expect(await h.server.store.openHoldsNano(h.accountId)).toBe(0);
    expect((await h.server.store.ledgerCheck()).ok).toBe(true);
  });
});
