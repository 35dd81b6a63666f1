import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, hello, startHarness } from '../helpers/harness.js';
import { TEST_DIALECT } from '../helpers/test-database.js';

/**
 * A key of an empty account calling in a loop is refused with 402 each time. Refusals move no money; they
 * must not grow the database by a row each (hundreds of megabytes per million refusals), yet the
 * account must still see them: counted per key, error code and minute.
 */
const CALLS = 10_000;
/** Calls in flight at once (below the per-key limits on requests in flight). */
const CONCURRENCY = 10;
const MINUTE_MS = 60_000;

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

/** Rows of `usage` and of `refusals` (none before migration 0010 made the table). */
async function rowsOf(): Promise<{ usage: number; refusals: number }> {
  const [usage] = await h.db.query<{ n: number | string }>('select count(*) as n from usage');
  const refusals = await h.db
    .query<{ n: number | string }>('select count(*) as n from refusals')
    .then((r) => Number(r[0]?.n ?? 0))
    .catch(() => 0);
  return { usage: Number(usage?.n ?? 0), refusals };
}

describe(`a flood of refused calls (${TEST_DIALECT})`, () => {
  it(
    `${CALLS.toLocaleString('en-US')} refused calls of one key add O(1) rows per minute, and the account sees their count`,
    {
      timeout: 300_000,
    },
    async () => {
      const { accountId, key } = await h.newAccount('0');
      const before = await rowsOf();
      const started = Date.now();
      const statuses = new Map<number, number>();
      for (let sent = 0; sent < CALLS; sent += CONCURRENCY) {
        const batch = await Promise.all(
          Array.from({ length: Math.min(CONCURRENCY, CALLS - sent) }, () => h.chat(hello, { key })),
        );
        for (const res of batch) statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      }
      const ended = Date.now();
      const after = await rowsOf();
      const minutes = Math.floor(ended / MINUTE_MS) - Math.floor(started / MINUTE_MS) + 1;
      const added = after.usage + after.refusals - (before.usage + before.refusals);
      console.log(
        `refusal flood (${TEST_DIALECT}): ${CALLS} refused calls in ${((ended - started) / 1000).toFixed(1)} s ` +
          `(${Math.round(CALLS / ((ended - started) / 1000))}/s) over ${minutes} minute(s) added ${added} rows ` +
          `(usage +${after.usage - before.usage}, refusals +${after.refusals - before.refusals})`,
      );
      expect(Object.fromEntries(statuses)).toEqual({ 402: CALLS });
      // One key, one error code: one row per minute the flood lasted.
      expect(after.usage - before.usage).toBe(0);
      expect(added).toBeLessThanOrEqual(minutes);

      // The account still sees every refused call: in its usage list, chart and keys (as the dashboard
      // API serves them, test/dashboard/refusals.test.ts), and nothing was charged.
      const dash = h.server.store.dashboard();
      const page = await dash.usagePage(accountId, {}, { limit: 50 });
      expect(page.every((r) => r.errorCode === 'insufficient_balance' && r.httpStatus === 402)).toBe(true);
      expect(page.reduce((n, r) => n + r.requests, 0)).toBe(CALLS);
      const day = Math.floor(started / 86_400_000) * 86_400_000;
      const daily = await dash.refusalsDaily(accountId, { from: day - 86_400_000, to: day + 2 * 86_400_000 });
      expect(daily.reduce((n, d) => n + d.requests, 0)).toBe(CALLS);
      const [keyRow] = await dash.listKeysWithSpend(accountId);
      expect(keyRow).toMatchObject({ requests: CALLS, refused: CALLS, spendNano: 0 });
      const report = await h.server.store.ledgerCheck();
      expect(report.problems).toEqual([]);
      expect(report.ok).toBe(true);
    },
  );

  it('refusals by the per-key rate limit (429) write no row at all', async () => {
    const limited = await startHarness({ env: { KEY_RATE_LIMIT_RPM: '60' } });
    try {
      const { key } = await limited.newAccount('0');
      const count = async () => {
        const [u] = await limited.db.query<{ n: number | string }>('select count(*) as n from usage');
        const [r] = await limited.db.query<{ n: number | string }>('select count(*) as n from refusals');
        return Number(u?.n ?? 0) + Number(r?.n ?? 0);
      };
      const before = await count();
      const statuses = new Map<number, number>();
      for (let i = 0; i < 500; i++) {
        const res = await limited.chat(hello, { key });
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      }
      expect(statuses.get(429) ?? 0).toBeGreaterThan(250);
      // Those the bucket admitted were refused for their balance: counted, one row per minute.
      expect((await count()) - before).toBeLessThanOrEqual(2);
      expect(statuses.get(402) ?? 0).toBe(500 - (statuses.get(429) ?? 0));
    } finally {
      await limited.close();
    }
  });
});
