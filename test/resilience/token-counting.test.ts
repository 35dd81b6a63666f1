import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/harness.js';

/**
 * An upstream that reports no usage makes the gateway count the tokens itself. The o200k tokenizer is
 * quadratic on a long run of one character; counted on the event loop, a 1 MB prompt would stall every
 * other request for minutes. It is counted on a worker thread, bounded in time (UTF-8 bytes stand in past
 * the bound), and the hold of the call being counted is never swept, however late its settle.
 */

let h: Harness;
let url: string;
const released: number[] = [];

beforeAll(async () => {
  h = await startHarness({
    credit: '100',
    env: {
      // The hold expires with the request's deadline (no grace), and the sweeper runs often: a call still
      // being counted after its deadline is exactly what it must leave alone. The upstream answers at once,
      // well within the deadline, and the count then runs past it, to its own bound.
      REQUEST_TIMEOUT_MS: '2000',
      HOLD_GRACE_MS: '0',
      HOLD_SWEEP_INTERVAL_MS: '100',
      TOKEN_COUNT_TIMEOUT_MS: '4000',
      BODY_LIMIT_BYTES: String(4 * 1024 * 1024),
    },
  });
  url = await h.server.listen();
  // Every release the sweeper makes, recorded (it calls the store's method at each sweep).
  const store = h.server.store;
  const original = store.releaseHolds.bind(store);
  store.releaseHolds = async (filter) => {
    const n = await original(filter);
    released.push(n);
    return n;
  };
});
afterAll(async () => {
  await h.close();
});

/**
 * Calls /healthz one after another (10 ms apart) until `until` settles: when each was answered. Client and
 * server share this event loop, so a loop held up (a call counted on it) shows as a long gap between two
 * answers, whether it caught a request in flight or the pause between two.
 */
async function healthAnswers(until: Promise<unknown>): Promise<number[]> {
  const answered: number[] = [];
  let done = false;
  void until.finally(() => {
    done = true;
  });
  while (!done) {
    const res = await fetch(`${url}/healthz`);
    await res.text();
    answered.push(performance.now());
    await new Promise((r) => setTimeout(r, 10));
  }
  return answered;
}

describe('a 1 MB prompt of one character, from an upstream that reports no usage', () => {
  it(
    'is counted off the event loop, billed as estimated, and its hold is never swept early',
    {
      timeout: 60_000,
    },
    async () => {
      h.sim.setFault('mistral', { kind: 'no_usage' });
      const before = await h.balanceNano();
      const sent = performance.now();
      const call = fetch(`${url}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${h.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          provider: 'prov-mistral',
          messages: [{ role: 'user', content: 'a'.repeat(1_000_000) }],
        }),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, unknown> }));
      const answered = await healthAnswers(call);
      const res = await call;
      const done = performance.now();
      h.sim.setFault('mistral', null);

      expect(res.status, JSON.stringify(res.body)).toBe(200);
      // The call took its upstream's answer and then the whole count (it ran to its time bound, below). On
      // the event loop, the count would have been one gap between /healthz answers, most of the call; off
      // it, no gap is a third of the call, however busy the machine (a neighbour stretches both alike).
      const times = [sent, ...answered, done];
      const longestGap = Math.max(...times.slice(1).map((t, i) => t - (times[i] as number)));
      expect(answered.length).toBeGreaterThanOrEqual(3);
      expect(longestGap).toBeLessThan((done - sent) / 3);

      // Billed: the prompt at its byte bound (the tokenizer did not finish in time), marked estimated.
      const usage = res.body.usage as { prompt_tokens: number };
      expect(usage.prompt_tokens).toBeGreaterThanOrEqual(1_000_000);
      const meta = res.body.meta as { cost: { total: number } };
      const charged = before - (await h.balanceNano());
      expect(charged).toBe(Math.round(meta.cost.total * 1e9));
      expect(charged).toBeGreaterThan(0);
      const rows = await h.server.store.listUsage(h.accountId, { limit: 1 });
      expect(rows[0]?.requestId).toBe(res.body.id);
      expect(rows[0]?.usageEstimated).toBe(true);

      // The sweeper ran all along and released nothing: the call's hold was settled, not swept.
      expect(released.length).toBeGreaterThan(5);
      expect(released.reduce((a, b) => a + b, 0)).toBe(0);
      const report = await h.server.store.ledgerCheck({ shortfallAllowanceNano: 0 });
      expect(report.problems).toEqual([]);
    },
  );
});
