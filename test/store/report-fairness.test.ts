import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayError } from '../../src/errors.js';
import type { DashboardStore } from '../../src/store/dashboard-types.js';
import { openStore } from '../../src/store/index.js';
import type { SqliteStore } from '../../src/store/sqlite/store.js';
import type { Store } from '../../src/store/types.js';
import { createTestDatabase, TEST_DIALECT, type TestDatabase } from '../helpers/test-database.js';
import { bulkUsage } from './bulk-usage.js';
import { fundedAccount } from './store-fixtures.js';

/**
 * The dashboard's reports of one account must not hold up another account's (fair turns, a limit per
 * account), and each report has a time bound: past it, it is stopped and answered with a clear 503.
 * Measured on a large account: its 30-day chart reads every one of its rows.
 */
const BIG_ROWS = 1_500_000;
const DAY_MS = 86_400_000;
/**
 * Of the flooding account's 30 reports, at most this many end before another account's report is answered
 * (one per account runs at once, in two slots): in arrival order it would wait for most of them.
 */
const FLOOD_DONE_BEFORE_BOUND = 3;

let dir: string;
let db: TestDatabase;
let store: Store;
let dash: DashboardStore;
let big: string;
let small: string;
const now = Date.now();
const range = { from: Math.floor(now / DAY_MS - 29) * DAY_MS, to: Math.floor(now / DAY_MS + 1) * DAY_MS };

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-fair-'));
  db = await createTestDatabase(dir, 'db.sqlite');
  store = await openStore(db.url, { sqliteSynchronous: 'NORMAL' });
  await store.migrate();
  big = await fundedAccount(store, 0);
  small = await fundedAccount(store, 0);
  await bulkUsage(db, {
    accountId: big,
    keyId: 'key_big',
    rows: BIG_ROWS,
    from: range.from,
    to: now,
    prefix: 'big-',
  });
  await bulkUsage(db, {
    accountId: small,
    keyId: 'key_small',
    rows: 200,
    from: range.from,
    to: now,
    prefix: 'small-',
  });
  if (TEST_DIALECT === 'postgres') await db.query('analyze usage');
  dash = store.dashboard();
}, 120_000);
afterAll(async () => {
  await store.close();
  await db.drop();
  rmSync(dir, { recursive: true, force: true });
});

async function timed<T>(run: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await run();
  return { ms: performance.now() - started, value };
}

describe(`dashboard reports (${TEST_DIALECT}): one account's cannot hold up another's, and each has a time bound`, () => {
  it(
    `30 concurrent slow reports of one account leave another account's answered before ${FLOOD_DONE_BEFORE_BOUND + 1} of them end`,
    { timeout: 120_000 },
    async () => {
      // Warm: the first report starts a reader thread and reads the pages from disk.
      await dash.usageDaily(big, range);
      const alone = await timed(() => dash.usageDaily(big, range));
      const smallAlone = await timed(() => dash.usageDaily(small, range));
      expect(alone.value.reduce((n, d) => n + d.requests, 0)).toBe(BIG_ROWS);
      let floodDone = 0;
      const flood = Array.from({ length: 30 }, () =>
        timed(() => dash.usageDaily(big, range))
          .then(
            (r) => ({ ok: true as const, ms: r.ms }),
            (error: unknown) => ({ ok: false as const, error }),
          )
          .finally(() => {
            floodDone++;
          }),
      );
      await new Promise((r) => setTimeout(r, 20));
      const other = await timed(() => dash.usageDaily(small, range));
      const floodDoneBefore = floodDone;
      const outcomes = await Promise.all(flood);
      console.log(
        `report fairness (${TEST_DIALECT}, ${BIG_ROWS.toLocaleString('en-US')} rows): the big account's chart alone ${alone.ms.toFixed(0)} ms, ` +
          `the small one's alone ${smallAlone.ms.toFixed(1)} ms; under 30 concurrent charts of the big account ` +
          `the small one's took ${other.ms.toFixed(1)} ms, after ${floodDoneBefore} of them; of the 30, ${outcomes.filter((o) => o.ok).length} answered, ` +
          `${outcomes.filter((o) => !o.ok).length} timed out`,
      );
      expect(other.value.reduce((n, d) => n + d.requests, 0)).toBe(200);
      expect(floodDoneBefore).toBeLessThanOrEqual(FLOOD_DONE_BEFORE_BOUND);
      // The flooding account's own reports are answered or told they took too long; nothing else.
      for (const o of outcomes) {
        if (!o.ok) {
          expect(o.error).toBeInstanceOf(GatewayError);
          expect(o.error).toMatchObject({ code: 'service_unavailable', status: 503 });
        }
      }
      expect(outcomes.some((o) => o.ok)).toBe(true);
    },
  );

  it('a report past its time bound is stopped and gets a clear 503 service_unavailable', async () => {
    // Well below the big account's chart (hundreds of ms), so it is always stopped, however fast the machine.
    const BOUND_MS = 100;
    // The same report unbounded, for comparison: stopped at the bound, it ends well before this.
    const whole = await timed(() => dash.usageDaily(big, range).catch(() => undefined));
    const bounded = await openStore(db.url, {
      sqliteSynchronous: 'NORMAL',
      reports: { timeoutMs: BOUND_MS },
    });
    try {
      const quick = bounded.dashboard();
      // The first report starts the reader thread, which may itself take longer than the bound.
      await quick.usageDaily(small, range).catch(() => undefined);
      // Within the bound: answered.
      expect((await quick.usageDaily(small, range)).reduce((n, d) => n + d.requests, 0)).toBe(200);
      const started = performance.now();
      const error = await quick.usageDaily(big, range).then(
        () => undefined,
        (e: unknown) => e,
      );
      const ms = performance.now() - started;
      console.log(
        `report time bound (${TEST_DIALECT}): a ${BOUND_MS} ms bound answered after ${ms.toFixed(0)} ms`,
      );
      expect(error).toBeInstanceOf(GatewayError);
      expect(error).toMatchObject({
        code: 'service_unavailable',
        status: 503,
        type: 'server_error',
        message: expect.stringMatching(/^This report took longer than 0\.1 s and was stopped\./),
      });
      // Stopped at the bound, not when the query would have ended.
      expect(ms).toBeLessThan(whole.ms);
      // And the thread or connection serves the next report at once (SQLite: the query itself stopped, so
      // the same thread goes on; no thread had to be terminated).
      expect((await quick.usageDaily(small, range)).reduce((n, d) => n + d.requests, 0)).toBe(200);
      const reader = (bounded as Partial<SqliteStore>).reader;
      if (reader) expect(reader.started).toBe(1);
    } finally {
      await bounded.close();
    }
  });
});
