import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { UsageFilters } from '../../src/store/dashboard-types.js';
import { DatabaseUnavailableError, openStore } from '../../src/store/index.js';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/store.js';
import type { SqliteStore } from '../../src/store/sqlite/store.js';
import type { Store } from '../../src/store/types.js';
import { createTestDatabase, TEST_DIALECT, type TestDatabase } from '../helpers/test-database.js';
import { fundedAccount, recordOlderUsage, usageRow } from './store-fixtures.js';

let dir: string;
let db: TestDatabase;
let store: Store;
/** Stores opened by a test besides `store` (a second instance on the same database). */
const extraStores: Store[] = [];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-store-'));
  db = await createTestDatabase(dir, 'db.sqlite');
  store = await openStore(db.url, { sqliteSynchronous: 'NORMAL' });
  await store.migrate();
});
afterEach(async () => {
  for (const s of extraStores.splice(0)) await s.close();
  await store.close();
  await db.drop();
  rmSync(dir, { recursive: true, force: true });
});

/** Another handle on the same database, as a second gateway instance would open it. */
async function secondStore(): Promise<Store> {
  const other = await openStore(db.url, { sqliteSynchronous: 'NORMAL' });
  extraStores.push(other);
  return other;
}

/**
 * Runs `test` on a second database migrated only up to `migration`, as an older release left it (with a
 * store open on it); the database is dropped afterwards.
 */
async function withOlderDatabase(
  migration: string,
  test: (older: Store, olderDb: TestDatabase) => Promise<void>,
): Promise<void> {
  const olderDb = await createTestDatabase(dir, 'older.sqlite');
  const older = await openStore(olderDb.url, { sqliteSynchronous: 'NORMAL' });
  extraStores.push(older);
  try {
    await older.migrate(migration);
    await test(older, olderDb);
  } finally {
    await olderDb.drop();
  }
}

/** The start of `now`'s UTC day and month. */
function startsOf(now: number): { dayStart: number; monthStart: number } {
  const date = new Date(now);
  return {
    dayStart: Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate()),
    monthStart: Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1),
  };
}

/** What a settle or a release names of the hold it closes. */
const closing = (accountId: string, holdId: string, holdAmountNano: number) => ({
  holdId,
  accountId,
  holdAmountNano,
});

const hold = (accountId: string, holdId: string, amountNano: number, expiresAt = Date.now() + 60_000) => ({
  holdId,
  accountId,
  requestId: `req-${holdId}`,
  amountNano,
  owner: 'inst_a',
  createdAt: Date.now(),
  expiresAt,
});

describe(`store (${TEST_DIALECT}): money moves only through hold → settle / release, and the ledger always balances`, () => {
  it.runIf(TEST_DIALECT === 'sqlite')(
    'WAL mode and the chosen synchronous level are set on the file',
    async () => {
      const raw = new SQLite(join(dir, 'db.sqlite'), { readonly: true });
      expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
      raw.close();
    },
  );

  it.runIf(TEST_DIALECT === 'sqlite')(
    'the page cache of the serving connection is SQLITE_CACHE_MB, 4 MiB unless set',
    async () => {
      const cacheOf = (s: Store) => (s as SqliteStore).connection.pragma('cache_size', { simple: true });
      expect(cacheOf(store)).toBe(-4096);
      const larger = await openStore(db.url, { sqliteSynchronous: 'NORMAL', sqliteCacheMb: 32 });
      extraStores.push(larger);
      expect(cacheOf(larger)).toBe(-32 * 1024);
    },
  );

  it('the store reports its dialect', () => {
    expect(store.dialect).toBe(TEST_DIALECT);
  });

  it('the store says whether several server processes may share its database', () => {
    expect(store.sharedByInstances).toBe(TEST_DIALECT === 'postgres');
  });

  it('migrate is idempotent', async () => {
    await store.migrate();
    await store.migrate();
    expect((await store.ledgerCheck()).ok).toBe(true);
  });

  it('a hold larger than the balance changes nothing', async () => {
    const id = await fundedAccount(store, 1000);
    const refused = await store.placeHold(hold(id, 'h1', 1001));
    expect(refused).toEqual({ ok: false, reason: 'insufficient_balance', balanceNano: 1000 });
    expect(await store.openHoldsNano(id)).toBe(0);
    const ok = await store.placeHold(hold(id, 'h2', 1000));
    expect(ok).toEqual({ ok: true });
    expect((await store.getAccount(id))?.balanceNano).toBe(0);
    expect(await store.openHoldsNano(id)).toBe(1000);
  });

  it('settle charges the actual cost and returns the rest of the hold', async () => {
    const id = await fundedAccount(store, 1000);
    await store.placeHold(hold(id, 'h1', 600));
    const settled = await store.settle({
      holdId: 'h1',
      accountId: id,
      holdAmountNano: 600,
      costNano: 250,
      usage: usageRow(id, 'r1'),
    });
    expect(settled).toEqual({ balanceNano: 750, chargedNano: 250, shortfallNano: 0 });
    expect(await store.openHoldsNano(id)).toBe(0);
    // The usage row records the charge; the ledger holds the credit only.
    expect(await db.query('select charged_nano, shortfall_nano from usage')).toEqual([
      { charged_nano: 250, shortfall_nano: 0 },
    ]);
    expect(await db.query('select kind, amount_nano from ledger')).toEqual([
      { kind: 'credit', amount_nano: 1000 },
    ]);
    expect(await store.chargesSince(id, [0, Date.now() + 60_000])).toEqual([250, 0]);
    expect((await store.ledgerCheck()).ok).toBe(true);
  });

  it('a cost above hold + balance stops at zero and records the shortfall', async () => {
    const id = await fundedAccount(store, 1000);
    await store.placeHold(hold(id, 'h1', 900));
    const settled = await store.settle({
      holdId: 'h1',
      accountId: id,
      holdAmountNano: 900,
      costNano: 1500,
      usage: usageRow(id, 'r1'),
    });
    expect(settled).toEqual({ balanceNano: 0, chargedNano: 1000, shortfallNano: 500 });
    expect(await db.query('select charged_nano, shortfall_nano from usage')).toEqual([
      { charged_nano: 1000, shortfall_nano: 500 },
    ]);
    // The money is consistent; the unbilled service is reported (test/store/ledger-shortfall.test.ts).
    expect((await store.ledgerCheck()).problems.map((p) => p.reason)).toEqual(['shortfall']);
    expect((await store.ledgerCheck({ shortfallAllowanceNano: 500 })).ok).toBe(true);
  });

  it('spend today and this month: each settle adds its charge to the day and month its request started, as the usage rows sum them', async () => {
    const id = await fundedAccount(store, 10_000_000);
    const now = Date.now();
    const { dayStart, monthStart } = startsOf(now);
    const yesterday = dayStart - 3_600_000;
    const lastMonth = monthStart - 3_600_000;
    const settleAt = async (holdId: string, costNano: number, createdAt: number) => {
      expect((await store.placeHold(hold(id, holdId, 5_000))).ok).toBe(true);
      return store.settle({
        ...closing(id, holdId, 5_000),
        costNano,
        usage: usageRow(id, `req-${holdId}`, { createdAt }),
      });
    };
    const expectSpend = async (todayNano: number, monthNano: number) => {
      expect(await store.spendOf(id, now)).toEqual({ todayNano, monthNano });
      // The counters agree with the sums of the usage rows.
      expect(await store.chargesSince(id, [dayStart, monthStart])).toEqual([todayNano, monthNano]);
    };
    const sameMonth = (t: number) => t >= monthStart;

    await expectSpend(0, 0);
    await settleAt('h1', 100, now);
    await expectSpend(100, 100);
    // Started yesterday, settled after today's: not today's (and this month's unless today is the 1st).
    await settleAt('h2', 20, yesterday);
    await expectSpend(100, 100 + (sameMonth(yesterday) ? 20 : 0));
    await settleAt('h3', 3, lastMonth);
    await expectSpend(100, 100 + (sameMonth(yesterday) ? 20 : 0));

    // Settled together: one group (SQLite's figures kept for the transaction, PostgreSQL's group
    // statement), with a request of yesterday among them.
    await Promise.all(['g1', 'g2', 'g3', 'g4'].map((h) => store.placeHold(hold(id, h, 5_000))));
    await Promise.all([
      store.settle({
        ...closing(id, 'g1', 5_000),
        costNano: 1_000,
        usage: usageRow(id, 'req-g1', { createdAt: now }),
      }),
      store.settle({
        ...closing(id, 'g2', 5_000),
        costNano: 400,
        usage: usageRow(id, 'req-g2', { createdAt: yesterday }),
      }),
      store.settle({
        ...closing(id, 'g3', 5_000),
        costNano: 3_000,
        usage: usageRow(id, 'req-g3', { createdAt: now + 1 }),
      }),
      store.settle({
        ...closing(id, 'g4', 5_000),
        costNano: 0,
        usage: usageRow(id, 'req-g4', { createdAt: now }),
      }),
    ]);
    const today = 100 + 1_000 + 3_000;
    const month = today + (sameMonth(yesterday) ? 20 + 400 : 0);
    await expectSpend(today, month);

    // A cost beyond the hold and the balance: what was charged counts, not the cost.
    const poor = await fundedAccount(store, 700);
    expect((await store.placeHold(hold(poor, 'p1', 500))).ok).toBe(true);
    const short = await store.settle({
      ...closing(poor, 'p1', 500),
      costNano: 900,
      usage: usageRow(poor, 'req-p1', { createdAt: now }),
    });
    expect(short).toMatchObject({ chargedNano: 700, shortfallNano: 200 });
    expect(await store.spendOf(poor, now)).toEqual({ todayNano: 700, monthNano: 700 });

    // Read on a later day and in a later month, the counters are of days and months that are over.
    expect(await store.spendOf(id, dayStart + 86_400_000 + 1)).toEqual({
      todayNano: 0,
      monthNano: sameMonth(dayStart + 86_400_000 + 1) ? month : 0,
    });
    expect(await store.spendOf(id, now + 40 * 86_400_000)).toEqual({ todayNano: 0, monthNano: 0 });
    // The shortfall of `poor` is reported as such; the spend counters are right.
    expect((await store.ledgerCheck({ shortfallAllowanceNano: 200 })).ok).toBe(true);
  });

  it('a request id is settled at most once (the second settle fails and changes nothing)', async () => {
    const id = await fundedAccount(store, 1000);
    await store.placeHold(hold(id, 'h1', 100));
    await store.placeHold(hold(id, 'h2', 100));
    await store.settle({ ...closing(id, 'h1', 100), costNano: 50, usage: usageRow(id, 'same') });
    await expect(
      store.settle({ ...closing(id, 'h2', 100), costNano: 50, usage: usageRow(id, 'same') }),
    ).rejects.toThrow();
    expect(await store.openHoldsNano(id)).toBe(100);
    expect((await store.getAccount(id))?.balanceNano).toBe(850);
    expect((await store.ledgerCheck()).ok).toBe(true);
  });

  it.runIf(TEST_DIALECT === 'sqlite')(
    'a settle that names another amount than the hold was placed with closes nothing (SQLite closes by id, account and amount)',
    async () => {
      const id = await fundedAccount(store, 1000);
      await store.placeHold(hold(id, 'h1', 400));
      const settled = await store.settle({
        ...closing(id, 'h1', 399),
        costNano: 100,
        usage: usageRow(id, 'r1'),
      });
      // Treated as a hold already closed: the cost comes from the balance, the hold stays open until released.
      expect(settled).toEqual({ balanceNano: 500, chargedNano: 100, shortfallNano: 0 });
      expect(await store.openHoldsNano(id)).toBe(400);
      expect((await store.ledgerCheck()).ok).toBe(true);
      expect((await store.release({ ...closing(id, 'h1', 400), usage: null })).balanceNano).toBe(900);
      expect(await store.openHoldsNano(id)).toBe(0);
      expect((await store.ledgerCheck()).ok).toBe(true);
    },
  );

  it('a hold released by the sweeper is not returned twice when its request settles later', async () => {
    const id = await fundedAccount(store, 1000);
    await store.placeHold(hold(id, 'h1', 400, Date.now() - 1));
    expect(await store.releaseHolds({ kind: 'expired', now: Date.now() })).toBe(1);
    expect((await store.getAccount(id))?.balanceNano).toBe(1000);
    const settled = await store.settle({
      ...closing(id, 'h1', 400),
      costNano: 100,
      usage: usageRow(id, 'r1'),
    });
    expect(settled.balanceNano).toBe(900);
    const released = await store.release({ ...closing(id, 'h1', 400), usage: null });
    expect(released.balanceNano).toBe(900);
    expect((await store.ledgerCheck()).ok).toBe(true);
  });

  it('releaseHolds all / not_owned_by / expired pick the right holds', async () => {
    const id = await fundedAccount(store, 10_000);
    await store.placeHold(hold(id, 'a', 100));
    await store.placeHold({ ...hold(id, 'b', 200), owner: 'inst_b' });
    await store.placeHold(hold(id, 'c', 300, Date.now() - 5));
    expect(await store.releaseHolds({ kind: 'expired', now: Date.now() })).toBe(1);
    expect(await store.releaseHolds({ kind: 'not_owned_by', owner: 'inst_a' })).toBe(1);
    expect(await store.openHoldsNano(id)).toBe(100);
    expect(await store.releaseHolds({ kind: 'all' })).toBe(1);
    expect((await store.getAccount(id))?.balanceNano).toBe(10_000);
  });

  it("releaseHolds of_stale_instances takes the old holds of silent registered instances only; owned_by one owner's", async () => {
    const id = await fundedAccount(store, 10_000);
    const t = Date.now();
    const staleBefore = t - 30_000;
    await store.markInstanceAlive('inst_dead', t - 60_000);
    await store.markInstanceAlive('inst_live', t - 60_000);
    await store.markInstanceAlive('inst_live', t - 1_000); // its heartbeat: started_at stays, seen_at moves
    const placed = (holdId: string, owner: string, createdAt: number, amountNano: number) =>
      store.placeHold({ ...hold(id, holdId, amountNano), owner, createdAt });
    await placed('dead-old', 'inst_dead', t - 50_000, 1);
    await placed('dead-new', 'inst_dead', t - 1_000, 2); // placed after staleBefore: its owner was alive then
    await placed('live-old', 'inst_live', t - 50_000, 4);
    await placed('unknown-old', 'inst_unregistered', t - 50_000, 8); // left to its expiry
    expect(await store.releaseHolds({ kind: 'of_stale_instances', staleBefore })).toBe(1);
    expect(await store.openHoldsNano(id)).toBe(2 + 4 + 8);
    // A silent instance is forgotten only once it owns no hold.
    expect(await store.forgetStaleInstances(staleBefore)).toBe(0);
    expect(await store.releaseHolds({ kind: 'owned_by', owner: 'inst_dead' })).toBe(1);
    expect(await store.forgetStaleInstances(staleBefore)).toBe(1);
    const instances = await db.query<{
      owner: string;
      started_at: number | string;
      seen_at: number | string;
    }>('select owner, started_at, seen_at from instances order by owner');
    expect(instances.map((r) => [r.owner, Number(r.started_at), Number(r.seen_at)])).toEqual([
      ['inst_live', t - 60_000, t - 1_000],
    ]);
    await store.forgetInstance('inst_live');
    expect(await db.query('select owner from instances')).toEqual([]);
    expect(await store.openHoldsNano(id)).toBe(4 + 8);
    expect((await store.getAccount(id))?.balanceNano).toBe(10_000 - 12);
    expect((await store.ledgerCheck()).ok).toBe(true);
  });

  it('a closed hold leaves no row: settle, release, the sweeper and a refused settle each end with the table as it should be', async () => {
    const id = await fundedAccount(store, 10_000);
    const rows = async () =>
      (await db.query<{ id: string }>('select id from holds order by id')).map((r) => r.id);
    for (const h of ['h1', 'h2', 'h3', 'h4']) await store.placeHold(hold(id, h, 100));
    await store.placeHold(hold(id, 'h5', 100, Date.now() - 1));
    expect(await rows()).toEqual(['h1', 'h2', 'h3', 'h4', 'h5']);
    await store.settle({ ...closing(id, 'h1', 100), costNano: 40, usage: usageRow(id, 'r1') });
    await store.release({ ...closing(id, 'h2', 100), usage: null });
    expect(await store.releaseHolds({ kind: 'expired', now: Date.now() })).toBe(1);
    // A settle that fails (its request id was already settled) deletes nothing.
    await expect(
      store.settle({ ...closing(id, 'h3', 100), costNano: 40, usage: usageRow(id, 'r1') }),
    ).rejects.toThrow();
    expect(await rows()).toEqual(['h3', 'h4']);
    expect(await store.openHoldsTotal()).toEqual({ count: 2, amountNano: 200 });
    expect((await store.getAccount(id))?.balanceNano).toBe(10_000 - 40 - 200);
    expect((await store.ledgerCheck()).ok).toBe(true);
  });

  it('migration 0005 carries the open holds of an older database over and drops the closed ones', async () => {
    // A database migrated only up to 0004, with holds as that schema kept them.
    await withOlderDatabase('0004_open_hold_indexes', async (older, olderDb) => {
      const id = await fundedAccount(older, 1_000);
      const insert = (hid: string, amount: number, closedAt: number | null, reason: string | null) =>
        olderDb.query(
          `insert into holds (id, account_id, request_id, amount_nano, owner, created_at, expires_at, closed_at, close_reason)
           values (?, ?, ?, ?, 'inst_a', 1000, 2000, ?, ?)`,
          [hid, id, `req-${hid}`, amount, closedAt, reason],
        );
      await insert('open1', 100, null, null);
      await insert('done1', 200, 1500, 'settled');
      await insert('open2', 300, null, null);
      await insert('done2', 400, 1600, 'expired');

      await older.migrate();

      expect(
        await olderDb.query(
          'select id, account_id, request_id, amount_nano, owner, created_at, expires_at from holds order by id',
        ),
      ).toEqual(
        ['open1', 'open2'].map((hid, i) => ({
          id: hid,
          account_id: id,
          request_id: `req-${hid}`,
          amount_nano: i === 0 ? 100 : 300,
          owner: 'inst_a',
          created_at: 1000,
          expires_at: 2000,
        })),
      );
      expect(await older.openHoldsNano(id)).toBe(400);
      // The open holds are released as before; the table takes new holds.
      expect(await older.releaseHolds({ kind: 'expired', now: 3000 })).toBe(2);
      expect((await older.placeHold(hold(id, 'h1', 100))).ok).toBe(true);
      expect(await older.openHoldsTotal()).toEqual({ count: 1, amountNano: 100 });
      if (TEST_DIALECT === 'sqlite') {
        const [table] = await olderDb.query<{ sql: string }>(
          "select sql from sqlite_master where name = 'holds'",
        );
        expect(table?.sql).toMatch(/without rowid/i);
      }
    });
  });

  it('migration 0007: charges of an older database stay ledger rows and count with the usage rows charged after it', async () => {
    // A database migrated up to 0006, with one settled request as that schema recorded it: the balance
    // lowered, a ledger row of kind charge and a usage row without charged_nano.
    await withOlderDatabase('0006_instances', async (older, olderDb) => {
      const id = await fundedAccount(older, 1_000);
      const before = Date.now() - 3_600_000;
      await olderDb.query('update accounts set balance_nano = balance_nano - 300 where id = ?', [id]);
      await olderDb.query(
        `insert into ledger (id, account_id, kind, amount_nano, request_id, note, created_at)
         values ('led_old', ?, 'charge', 300, 'req-old', null, ?)`,
        [id, before],
      );
      await olderDb.query(
        `insert into usage (request_id, account_id, key_id, provider, model, prompt_tokens, completion_tokens,
                            usage_estimated, input_cost_nano, output_cost_nano, shortfall_nano, status,
                            error_code, http_status, duration_ms, client_gone, created_at)
         values ('req-old', ?, 'key_x', 'prov-deepseek', 'm', 10, 5, 0, 200, 100, 0, 'ok', null, 200, 1, 0, ?)`,
        [id, before],
      );

      await older.migrate();
      expect((await older.ledgerCheck()).ok).toBe(true);

      // A request settled after the migration: its charge is on its usage row alone.
      expect((await older.placeHold(hold(id, 'h1', 400))).ok).toBe(true);
      await older.settle({ ...closing(id, 'h1', 400), costNano: 150, usage: usageRow(id, 'req-new') });
      expect(await olderDb.query('select request_id, charged_nano from usage order by request_id')).toEqual([
        { request_id: 'req-new', charged_nano: 150 },
        { request_id: 'req-old', charged_nano: null },
      ]);
      expect(await olderDb.query("select id from ledger where kind = 'charge'")).toEqual([{ id: 'led_old' }]);
      expect(await older.chargesSince(id, [0, before + 1])).toEqual([450, 150]);
      const report = await older.ledgerCheck();
      expect(report.problems).toEqual([]);
      expect(report.ok).toBe(true);

      // The old request charged a second time on its usage row (money put back so only that is wrong).
      await olderDb.query("update usage set charged_nano = 300 where request_id = 'req-old'");
      await olderDb.query(
        `insert into ledger (id, account_id, kind, amount_nano, request_id, note, created_at)
         values ('led_fix', ?, 'credit', 300, null, null, ?)`,
        [id, before],
      );
      expect((await older.ledgerCheck()).problems).toEqual([
        expect.objectContaining({ accountId: id, reason: 'duplicate_charge', discrepancyNano: 0 }),
      ]);
    });
  });

  it('migration 0008 fills the spend counters from the usage rows and the charge rows of an older database', async () => {
    await withOlderDatabase('0007_charge_on_usage_row', async (older, olderDb) => {
      const id = await fundedAccount(older, 1_000_000);
      const other = await fundedAccount(older, 1_000_000);
      const now = Date.now();
      const { dayStart, monthStart } = startsOf(now);
      const usage = (requestId: string, account: string, charged: number | null, createdAt: number) =>
        olderDb.query(
          `insert into usage (request_id, account_id, key_id, provider, model, prompt_tokens, completion_tokens,
                              usage_estimated, input_cost_nano, output_cost_nano, shortfall_nano, status,
                              error_code, http_status, duration_ms, client_gone, created_at, charged_nano)
           values (?, ?, 'key_x', 'prov-deepseek', 'm', 10, 5, 0, 0, 0, 0, 'ok', null, 200, 1, 0, ?, ?)`,
          [requestId, account, createdAt, charged],
        );
      await usage('r-today', id, 500, now);
      await usage('r-month', id, 60, monthStart);
      await usage('r-before', id, 7, monthStart - 1);
      await usage('r-failed', id, null, now);
      await usage('r-other', other, 9, now);
      await olderDb.query(
        `insert into ledger (id, account_id, kind, amount_nano, request_id, note, created_at)
         values ('led_old', ?, 'charge', 4000, 'r-legacy', null, ?)`,
        [id, now],
      );
      await olderDb.query('update accounts set balance_nano = balance_nano - 4000 where id = ?', [id]);

      await older.migrate();
      const today = 500 + 4000 + (monthStart >= dayStart ? 60 : 0);
      expect(await older.spendOf(id, now)).toEqual({ todayNano: today, monthNano: 500 + 60 + 4000 });
      expect(await older.chargesSince(id, [dayStart, monthStart])).toEqual([today, 500 + 60 + 4000]);
      expect(await older.spendOf(other, now)).toEqual({ todayNano: 9, monthNano: 9 });
    });
  });

  it('migration 0009: the usage rows of an older database are found by the dashboard through one index per account', async () => {
    await withOlderDatabase('0008_spend_counters', async (older, olderDb) => {
      const id = await fundedAccount(older, 1_000);
      const other = await fundedAccount(older, 1_000);
      const at = Date.UTC(2026, 10, 20, 12);
      const rows: [string, string, string, string, number][] = [
        ['r1', id, 'key_a', 'prov-qwen', at],
        ['r2', id, 'key_b', 'prov-qwen', at + 1],
        ['r3', id, 'key_a', 'prov-kimi', at + 2],
        ['r4', other, 'key_a', 'prov-qwen', at + 3],
      ];
      for (const [requestId, account, keyId, provider, createdAt] of rows) {
        await recordOlderUsage(olderDb, usageRow(account, requestId, { keyId, provider, createdAt }));
      }

      await older.migrate();
      const indexes =
        TEST_DIALECT === 'sqlite'
          ? await olderDb.query<{ name: string }>(
              "select name from sqlite_master where type = 'index' and tbl_name = 'usage' and sql is not null",
            )
          : await olderDb.query<{ name: string }>(
              "select indexname as name from pg_indexes where tablename = 'usage' and schemaname = current_schema() and indexname <> 'usage_pkey'",
            );
      expect(indexes.map((i) => i.name).sort()).toEqual(['usage_account_time', 'usage_created']);
      const dashboard = older.dashboard();
      const ids = async (filters: UsageFilters) =>
        (await dashboard.usagePage(id, filters, { limit: 10 })).map((r) => r.requestId);
      expect(await ids({})).toEqual(['r3', 'r2', 'r1']);
      expect(await ids({ keyId: 'key_a' })).toEqual(['r3', 'r1']);
      expect(await ids({ provider: 'prov-qwen' })).toEqual(['r2', 'r1']);
      expect(await ids({ keyId: 'key_a', provider: 'prov-kimi' })).toEqual(['r3']);
      expect(await ids({ keyId: 'key_none' })).toEqual([]);
      const daily = await dashboard.usageDaily(id, { from: at - 1, to: at + 10 }, 'key_a');
      expect(daily.map((d) => [d.provider, d.requests])).toEqual([
        ['prov-kimi', 1],
        ['prov-qwen', 1],
      ]);
    });
  });

  it('ledger check reports spend counters that differ from the charges of today and this month', async () => {
    const id = await fundedAccount(store, 10_000);
    expect((await store.placeHold(hold(id, 'h1', 1_000))).ok).toBe(true);
    await store.settle({ ...closing(id, 'h1', 1_000), costNano: 300, usage: usageRow(id, 'r1') });
    expect((await store.ledgerCheck()).ok).toBe(true);
    await db.query('update accounts set spend_day_nano = spend_day_nano + 7 where id = ?', [id]);
    const report = await store.ledgerCheck();
    expect(report.ok).toBe(false);
    expect(report.problems).toEqual([
      expect.objectContaining({
        accountId: id,
        reason: 'spend_counters',
        discrepancyNano: 0,
        spend: { todayNano: 300, monthNano: 300, countedTodayNano: 307, countedMonthNano: 300 },
      }),
    ]);
  });

  it('ledger check reports an account whose balance was changed outside the ledger', async () => {
    const id = await fundedAccount(store, 1000);
    await db.query('update accounts set balance_nano = balance_nano + 5 where id = ?', [id]);
    const report = await store.ledgerCheck();
    expect(report.ok).toBe(false);
    expect(report.problems).toEqual([
      expect.objectContaining({ accountId: id, reason: 'mismatch', discrepancyNano: -5 }),
    ]);
  });

  it('the balance column refuses to go below zero even if asked directly', async () => {
    const id = await fundedAccount(store, 10);
    await expect(db.query('update accounts set balance_nano = -1 where id = ?', [id])).rejects.toThrow(
      /check/i,
    );
  });

  it('money columns are BIGINT: amounts beyond 32 bits round-trip exactly', async () => {
    const big = 9_000_000_000_000_000; // 9 million dollars in nanodollars, > 2^53 / 1000
    const id = await fundedAccount(store, big);
    expect((await store.getAccount(id))?.balanceNano).toBe(big);
    await store.placeHold(hold(id, 'h1', big - 1));
    expect(await store.openHoldsNano(id)).toBe(big - 1);
    expect((await store.ledgerCheck()).ok).toBe(true);
  });

  it('at most maxActive unrevoked keys; revoked keys do not count', async () => {
    const id = await fundedAccount(store, 0);
    const make = (n: number) =>
      store.createApiKey({ accountId: id, name: `k${n}`, keyHash: `h${n}`, hint: 'x', maxActive: 2 });
    const a = await make(1);
    expect((await make(2)).ok).toBe(true);
    expect(await make(3)).toEqual({ ok: false, reason: 'limit_reached' });
    if (!a.ok) throw new Error('key');
    expect(await store.revokeApiKey(id, a.key.id)).toBe('revoked');
    expect(await store.revokeApiKey(id, a.key.id)).toBe('already_revoked');
    expect(await store.revokeApiKey(id, 'key_missing')).toBe('not_found');
    expect((await make(4)).ok).toBe(true);
    expect((await store.findKeyByHash('h1'))?.revoked).toBe(true);
    expect((await store.findKeyByHash('h4'))?.revoked).toBe(false);
  });

  it('emails are unique', async () => {
    await store.createAccount({ email: 'same@x.test', role: 'user', passwordHash: null });
    expect(await store.createAccount({ email: 'same@x.test', role: 'admin', passwordHash: null })).toEqual({
      ok: false,
      reason: 'email_taken',
    });
  });
});

// Several instances share PostgreSQL. (SQLite is the one-instance store: writers in other processes, such
// as the CLI, queue on its file lock; two handles inside this one test process would instead block each
// other's event loop while waiting, so these run on PostgreSQL.)
describe.runIf(TEST_DIALECT === 'postgres')('store (postgres): several instances on one database', () => {
  it('concurrent holds from two instances never take more than the balance', async () => {
    const other = await secondStore();
    const id = await fundedAccount(store, 10_000);
    const attempts = Array.from({ length: 40 }, (_, i) =>
      (i % 2 === 0 ? store : other).placeHold(hold(id, `h${i}`, 1_000)),
    );
    const results = await Promise.all(attempts);
    expect(results.filter((r) => r.ok)).toHaveLength(10);
    expect((await store.getAccount(id))?.balanceNano).toBe(0);
    expect(await other.openHoldsNano(id)).toBe(10_000);
    expect((await store.ledgerCheck()).ok).toBe(true);
  });

  it('sweepers of two instances and the settles they race release each hold exactly once', async () => {
    const other = await secondStore();
    const id = await fundedAccount(store, 100_000);
    const past = Date.now() - 1;
    for (let i = 0; i < 20; i++) await store.placeHold(hold(id, `h${i}`, 1_000, past));
    const [a, b] = await Promise.all([
      store.releaseHolds({ kind: 'expired', now: Date.now() }),
      other.releaseHolds({ kind: 'expired', now: Date.now() }),
      ...Array.from({ length: 10 }, (_, i) =>
        store.settle({ ...closing(id, `h${i}`, 1_000), costNano: 100, usage: usageRow(id, `r${i}`) }),
      ),
    ]);
    expect((a as number) + (b as number)).toBeLessThanOrEqual(20);
    expect(await store.openHoldsNano(id)).toBe(0);
    // Ten settles charged 100 each, whether their hold was still open or already released.
    expect((await store.getAccount(id))?.balanceNano).toBe(100_000 - 10 * 100);
    expect((await store.ledgerCheck()).ok).toBe(true);
  });

  it('one idempotency key claimed by two instances at once: exactly one request is started', async () => {
    const other = await secondStore();
    const id = await fundedAccount(store, 0);
    const now = Date.now();
    const claim = (s: Store, requestId: string) =>
      s.beginIdempotent({
        accountId: id,
        key: 'same-key',
        bodyHash: 'body',
        requestId,
        now,
        lockedUntil: now + 60_000,
        expiresAt: now + 86_400_000,
      });
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => claim(i % 2 === 0 ? store : other, `req${i}`)),
    );
    expect(results.filter((r) => r.kind === 'started')).toHaveLength(1);
    expect(results.filter((r) => r.kind === 'in_progress')).toHaveLength(9);
  });

  it('one email signed up on two instances at once: one account', async () => {
    const other = await secondStore();
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        (i % 2 === 0 ? store : other).createAccount({
          email: 'race@x.test',
          role: 'user',
          passwordHash: null,
        }),
      ),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(1);
  });
});

describe.runIf(TEST_DIALECT === 'postgres')('store (postgres): prepared statements', () => {
  /** The statements prepared in the session of a one-connection store, after a hold and a settle. */
  async function preparedAfterOneCall(preparedStatements: boolean): Promise<string[]> {
    const one = openPostgresStore(db.url, {
      sqliteSynchronous: 'NORMAL',
      postgres: { poolMax: 1, preparedStatements },
    });
    extraStores.push(one);
    const id = await fundedAccount(one, 10_000);
    for (const n of [1, 2]) {
      await one.placeHold({ ...hold(id, `p${n}`, 500), owner: 'inst_p' });
      await one.settle({ ...closing(id, `p${n}`, 500), costNano: 120, usage: usageRow(id, `rp${n}`) });
    }
    expect((await one.getAccount(id))?.balanceNano).toBe(10_000 - 240);
    expect((await one.ledgerCheck()).ok).toBe(true);
    const { rows } = await sql<{
      name: string;
    }>`select name from pg_prepared_statements order by name`.execute(one.kysely);
    return rows.map((r) => r.name);
  }

  it('the hold and the settle are named prepared statements, parsed once per connection', async () => {
    const names = await preparedAfterOneCall(true);
    expect(names).toHaveLength(2);
    expect(names.some((n) => /^tollgate_place_hold_\d+$/.test(n))).toBe(true);
    expect(names.some((n) => /^tollgate_settle_\d+$/.test(n))).toBe(true);
  });

  it('DATABASE_PREPARED_STATEMENTS=false sends every statement unnamed (for a pooler that cannot track them)', async () => {
    expect(await preparedAfterOneCall(false)).toEqual([]);
  });
});

describe.runIf(TEST_DIALECT === 'postgres')(
  'store (postgres): the calls of one account written together',
  () => {
    /** Another store on the test database (one pooled connection), whose statements a test counts. */
    async function oneConnection(): Promise<PostgresStore> {
      const one = openPostgresStore(db.url, {
        sqliteSynchronous: 'NORMAL',
        postgres: { poolMax: 1 },
      });
      extraStores.push(one);
      return one;
    }
    /** Counts the hold and settle statements `one` sends from now on. */
    function countStatements(one: PostgresStore): { holds: () => number; settles: () => number } {
      const spy = vi.spyOn(one.kysely, 'executeQuery');
      const sent = (text: string) =>
        spy.mock.calls.filter(([query]) => 'sql' in query && query.sql.includes(text)).length;
      return { holds: () => sent('insert into holds'), settles: () => sent('delete from holds') };
    }

    it('holds and settles of one account arriving together run as one statement each, with the results of one by one', async () => {
      const one = await oneConnection();
      const id = await fundedAccount(one, 100_000);
      const statements = countStatements(one);
      const held = await Promise.all(
        Array.from({ length: 20 }, (_, i) => one.placeHold(hold(id, `g${i}`, 1_000))),
      );
      expect(held.every((r) => r.ok)).toBe(true);
      expect((await one.getAccount(id))?.balanceNano).toBe(80_000);
      const settled = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          one.settle({ ...closing(id, `g${i}`, 1_000), costNano: 300, usage: usageRow(id, `rg${i}`) }),
        ),
      );
      expect(settled.every((r) => r.chargedNano === 300 && r.shortfallNano === 0)).toBe(true);
      // Every call of the group reports the balance after the whole group.
      expect(new Set(settled.map((r) => r.balanceNano))).toEqual(new Set([100_000 - 20 * 300]));
      expect((await one.getAccount(id))?.balanceNano).toBe(94_000);
      expect(await one.openHoldsNano(id)).toBe(0);
      const { rows } = await sql<{
        n: number;
      }>`select count(*)::int as n from usage where account_id = ${id}`.execute(one.kysely);
      expect(rows[0]?.n).toBe(20);
      expect((await one.ledgerCheck()).ok).toBe(true);
      // All twenty arrived in one event-loop turn: one hold statement, one settle statement.
      expect([statements.holds(), statements.settles()]).toEqual([1, 1]);
    });

    it('holds the balance cannot cover together are placed one by one, in arrival order', async () => {
      const one = await oneConnection();
      const id = await fundedAccount(one, 10_500);
      const statements = countStatements(one);
      const results = await Promise.all(
        [6_000, 5_000, 4_000, 500].map((amount, i) => one.placeHold(hold(id, `o${i}`, amount))),
      );
      // A refusal reports the balance when it is read, after the group (here 0, the later holds taken).
      expect(results.map((r) => (r.ok ? 'ok' : r.reason))).toEqual([
        'ok',
        'insufficient_balance',
        'ok',
        'ok',
      ]);
      expect(results[1]).toEqual({ ok: false, reason: 'insufficient_balance', balanceNano: 0 });
      expect(await one.openHoldsNano(id)).toBe(10_500);
      expect((await one.ledgerCheck()).ok).toBe(true);
      // The group's statement (refused: 15,500 > 10,500), then each hold alone.
      expect(statements.holds()).toBe(5);
    });

    it('a hold of a group that the database refuses fails alone', async () => {
      const one = await oneConnection();
      const id = await fundedAccount(one, 10_000);
      const statements = countStatements(one);
      // The same hold id twice: the group's insert is refused, then the calls run one by one.
      const [a, b, c] = await Promise.allSettled([
        one.placeHold(hold(id, 'same', 1_000)),
        one.placeHold(hold(id, 'same', 2_000)),
        one.placeHold(hold(id, 'other', 3_000)),
      ]);
      expect(a).toMatchObject({ status: 'fulfilled', value: { ok: true } });
      expect(b.status).toBe('rejected');
      expect(c).toMatchObject({ status: 'fulfilled', value: { ok: true } });
      expect(await one.openHoldsNano(id)).toBe(4_000);
      expect((await one.getAccount(id))?.balanceNano).toBe(6_000);
      expect((await one.ledgerCheck()).ok).toBe(true);
      expect(statements.holds()).toBe(1 + 3);
    });

    it('in a group of settles, a short or missing hold takes the general settle and a bad row fails only its own call', async () => {
      const one = await oneConnection();
      const id = await fundedAccount(one, 10_000);
      for (const h of ['s1', 's2', 's4', 's5']) await one.placeHold(hold(id, h, 1_000));
      await one.recordUsage(usageRow(id, 'taken'));
      const statements = countStatements(one);
      const settle = (holdId: string, costNano: number, requestId: string) =>
        one.settle({ ...closing(id, holdId, 1_000), costNano, usage: usageRow(id, requestId) });
      const [s1, s2, s3, s4, s5] = await Promise.allSettled([
        settle('s1', 100, 'r1'),
        settle('s2', 2_000, 'r2'), // more than its hold: the rest from the balance
        settle('s3', 300, 'r3'), // no such hold (released already): from the balance
        settle('s4', 100, 'taken'), // its usage row's id exists: this call fails, alone
        settle('s5', 0, 'r5'),
      ]);
      expect(s1).toMatchObject({ status: 'fulfilled', value: { chargedNano: 100, shortfallNano: 0 } });
      expect(s2).toMatchObject({ status: 'fulfilled', value: { chargedNano: 2_000, shortfallNano: 0 } });
      expect(s3).toMatchObject({ status: 'fulfilled', value: { chargedNano: 300, shortfallNano: 0 } });
      expect(s4.status).toBe('rejected');
      expect(s5).toMatchObject({ status: 'fulfilled', value: { chargedNano: 0, shortfallNano: 0 } });
      // 6,000 after the holds, +900 back from s1, -1,000 beyond s2's hold, -300 for s3, +1,000 back from s5.
      expect((await one.getAccount(id))?.balanceNano).toBe(6_600);
      expect(await one.openHoldsNano(id)).toBe(1_000); // s4's hold stays open until it expires
      expect((await one.ledgerCheck()).ok).toBe(true);
      // The group statement ran (and was refused for s4's row) before the calls ran one by one.
      expect(statements.settles()).toBe(1 + 5);
    });
  },
);

describe.runIf(TEST_DIALECT === 'postgres')('store (postgres): timeouts and an unreachable database', () => {
  it('a statement past DATABASE_STATEMENT_TIMEOUT_MS is cancelled and reported as 503 service_unavailable', async () => {
    const id = await fundedAccount(store, 1_000);
    const short = await openStore(db.url, {
      sqliteSynchronous: 'NORMAL',
      postgres: { statementTimeoutMs: 200, connectTimeoutMs: 1_000 },
    });
    extraStores.push(short);
    // Another session holds the account's row lock, so the credit has to wait for it.
    await db.query('begin');
    await db.query('select id from accounts where id = ? for update', [id]);
    const started = Date.now();
    const error = await short
      .addCredit({ accountId: id, amountNano: 5, note: null })
      .catch((e: unknown) => e);
    const waited = Date.now() - started;
    await db.query('rollback');
    expect(error).toBeInstanceOf(DatabaseUnavailableError);
    expect(error).toMatchObject({ status: 503, code: 'service_unavailable', retryAfterSeconds: 1 });
    expect(waited).toBeGreaterThanOrEqual(150);
    expect(waited).toBeLessThan(2_000);
    // Nothing was applied, and the store still works once the lock is gone.
    expect((await short.addCredit({ accountId: id, amountNano: 5, note: null })).balanceNano).toBe(1_005);
    expect((await store.ledgerCheck()).ok).toBe(true);
  });

  it('no server listening: every call fails fast with DatabaseUnavailableError', async () => {
    const nowhere = await openStore('postgres://postgres@127.0.0.1:1/none', {
      sqliteSynchronous: 'NORMAL',
      postgres: { connectTimeoutMs: 500 },
    });
    extraStores.push(nowhere);
    const started = Date.now();
    await expect(nowhere.getAccount('acct_x')).rejects.toBeInstanceOf(DatabaseUnavailableError);
    await expect(nowhere.ping()).rejects.toBeInstanceOf(DatabaseUnavailableError);
    expect(Date.now() - started).toBeLessThan(1_500);
  });

  it('the pool never opens more than DATABASE_POOL_MAX connections', async () => {
    const name = `tollgate_pool_${Math.random().toString(36).slice(2, 10)}`;
    const small = await openStore(`${db.url}&application_name=${name}`, {
      sqliteSynchronous: 'NORMAL',
      postgres: { poolMax: 3 },
    });
    extraStores.push(small);
    const id = await fundedAccount(store, 1_000_000);
    await Promise.all(
      Array.from({ length: 30 }, () => small.addCredit({ accountId: id, amountNano: 1, note: null })),
    );
    const [row] = await db.query<{ n: number }>(
      'select count(*) as n from pg_stat_activity where application_name = ?',
      [name],
    );
    expect(row?.n).toBeGreaterThan(0);
    expect(row?.n).toBeLessThanOrEqual(3);
    expect((await store.getAccount(id))?.balanceNano).toBe(1_000_030);
  });
});
