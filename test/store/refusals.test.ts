import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { UsageRow } from '../../src/store/dashboard-types.js';
import { openStore } from '../../src/store/index.js';
import type { RefusalRecord, Store } from '../../src/store/types.js';
import { createTestDatabase, TEST_DIALECT, type TestDatabase } from '../helpers/test-database.js';
import { fundedAccount, recordOlderUsage, usageRow } from './store-fixtures.js';

let dir: string;
let db: TestDatabase;
let store: Store;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-refusals-'));
  db = await createTestDatabase(dir, 'db.sqlite');
  store = await openStore(db.url, { sqliteSynchronous: 'NORMAL' });
  await store.migrate();
});
afterEach(async () => {
  await store.close();
  await db.drop();
  rmSync(dir, { recursive: true, force: true });
});

const MINUTE = 60_000;
const T0 = Date.UTC(2026, 4, 4, 10, 0);

const refusal = (accountId: string, keyId: string, at: number, errorCode = 'insufficient_balance') =>
  ({ accountId, keyId, errorCode, httpStatus: 402, at }) satisfies RefusalRecord;

async function refusalRows(): Promise<Record<string, unknown>[]> {
  return db.query(
    `select account_id, minute_start, key_id, error_code, http_status, requests from refusals
      order by account_id, minute_start, key_id, error_code`,
  );
}

describe(`refused requests (${TEST_DIALECT}): counted per account, key, minute and code, not a row each`, () => {
  it('refusals arriving together or one by one add to one row per key, minute and code', async () => {
    const a = await fundedAccount(store, 0);
    const b = await fundedAccount(store, 0);
    // Together (one batch), and then more of the same minute one at a time (each adds to the row).
    await Promise.all(
      Array.from({ length: 1_000 }, (_, i) => store.recordRefusal(refusal(a, 'key_a', T0 + i))),
    );
    for (let i = 0; i < 5; i++) await store.recordRefusal(refusal(a, 'key_a', T0 + 59_999));
    await Promise.all([
      store.recordRefusal(refusal(a, 'key_a', T0 + MINUTE)),
      store.recordRefusal(refusal(a, 'key_b', T0)),
      store.recordRefusal(refusal(a, 'key_a', T0, 'account_over_limit')),
      store.recordRefusal(refusal(b, 'key_c', T0 + 30)),
    ]);
    const row = (account: string, minute: number, key: string, code: string, requests: number) => ({
      account_id: account,
      minute_start: minute,
      key_id: key,
      error_code: code,
      http_status: 402,
      requests,
    });
    const expected = [
      row(a, T0, 'key_a', 'account_over_limit', 1),
      row(a, T0, 'key_a', 'insufficient_balance', 1_005),
      row(a, T0, 'key_b', 'insufficient_balance', 1),
      row(a, T0 + MINUTE, 'key_a', 'insufficient_balance', 1),
      row(b, T0, 'key_c', 'insufficient_balance', 1),
    ].sort((x, y) => (x.account_id < y.account_id ? -1 : x.account_id > y.account_id ? 1 : 0));
    expect(await refusalRows()).toEqual(expected);
    expect(await db.query('select request_id from usage')).toEqual([]);
    // They never move money.
    const report = await store.ledgerCheck();
    expect(report).toMatchObject({ ok: true, problems: [], shortfalls: [] });
  });

  it('refusals still queued when the store closes are written', async () => {
    const a = await fundedAccount(store, 0);
    const pending = Array.from({ length: 20 }, () => store.recordRefusal(refusal(a, 'key_a', T0)));
    await store.close();
    await Promise.all(pending);
    store = await openStore(db.url, { sqliteSynchronous: 'NORMAL' });
    expect((await refusalRows()).map((r) => r.requests)).toEqual([20]);
  });

  it('the usage list shows the counts among the requests, newest first, and pages through both without gaps or repeats', async () => {
    const a = await fundedAccount(store, 0);
    const dash = store.dashboard();
    // Requests at T0 + 5 s, the minute's start itself (a tie with the counts of that minute), and later.
    for (const [id, at, key] of [
      ['r1', T0 + 5_000, 'key_a'],
      ['r2', T0, 'key_a'],
      ['r3', T0 + MINUTE + 1, 'key_b'],
      ['r4', T0 + 3 * MINUTE, 'key_a'],
    ] as const) {
      await store.recordUsage(usageRow(a, id, { keyId: key, createdAt: at }));
    }
    for (let i = 0; i < 3; i++) await store.recordRefusal(refusal(a, 'key_a', T0 + 10));
    await store.recordRefusal(refusal(a, 'key_b', T0 + 20));
    await store.recordRefusal(refusal(a, 'key_a', T0 + 2 * MINUTE + 7));
    await store.recordRefusal(refusal(a, 'key_b', T0 + 2 * MINUTE + 9, 'other_code'));

    const all = await dash.usagePage(a, {}, { limit: 50 });
    const shape = (r: UsageRow) => [r.requestId, r.createdAt - T0, r.requests];
    const expected = [
      ['r4', 3 * MINUTE, 1],
      [`refused-${T0 + 2 * MINUTE}-key_b-other_code`, 2 * MINUTE, 1],
      [`refused-${T0 + 2 * MINUTE}-key_a-insufficient_balance`, 2 * MINUTE, 1],
      ['r3', MINUTE + 1, 1],
      ['r1', 5_000, 1],
      ['r2', 0, 1],
      [`refused-${T0}-key_b-insufficient_balance`, 0, 1],
      [`refused-${T0}-key_a-insufficient_balance`, 0, 3],
    ];
    expect(all.map(shape)).toEqual(expected);
    expect(all[1]).toMatchObject({
      keyId: 'key_b',
      status: 'error',
      errorCode: 'other_code',
      httpStatus: 402,
      provider: null,
      costNano: 0,
    });

    // Every page size: the same rows in the same order.
    for (const limit of [1, 2, 3]) {
      const seen: UsageRow[] = [];
      let cursor: { createdAt: number; requestId: string } | undefined;
      for (;;) {
        const rows = await dash.usagePage(a, {}, { limit: limit + 1, cursor });
        const page = rows.slice(0, limit);
        seen.push(...page);
        const last = page[page.length - 1];
        if (rows.length <= limit || !last) break;
        cursor = { createdAt: last.createdAt, requestId: last.requestId };
      }
      expect(seen.map(shape), `pages of ${limit}`).toEqual(expected);
    }

    // Filters: a key; the errors only; ok and a provider show no counts (refused requests reached none).
    expect((await dash.usagePage(a, { keyId: 'key_b' }, { limit: 50 })).map((r) => r.requestId)).toEqual([
      `refused-${T0 + 2 * MINUTE}-key_b-other_code`,
      'r3',
      `refused-${T0}-key_b-insufficient_balance`,
    ]);
    expect((await dash.usagePage(a, { status: 'error' }, { limit: 50 })).map((r) => r.requests)).toEqual([
      1, 1, 1, 3,
    ]);
    expect((await dash.usagePage(a, { status: 'ok' }, { limit: 50 })).map((r) => r.requestId)).toEqual([
      'r4',
      'r3',
      'r1',
      'r2',
    ]);
    expect(await dash.usagePage(a, { provider: 'prov-deepseek' }, { limit: 50 })).toHaveLength(4);
    expect(
      (await dash.usagePage(a, { from: T0 + MINUTE, to: T0 + 3 * MINUTE }, { limit: 50 })).map(
        (r) => r.requestId,
      ),
    ).toEqual([
      `refused-${T0 + 2 * MINUTE}-key_b-other_code`,
      `refused-${T0 + 2 * MINUTE}-key_a-insufficient_balance`,
      'r3',
    ]);

    // Per day, and per key (where `requests` counts the refused too, as when each had a usage row).
    const day = Math.floor(T0 / 86_400_000);
    expect(await dash.refusalsDaily(a, { from: day * 86_400_000, to: (day + 1) * 86_400_000 })).toEqual([
      { day, requests: 6 },
    ]);
    expect(await dash.refusalsDaily(a, { from: T0, to: T0 + MINUTE }, 'key_a')).toEqual([
      { day, requests: 3 },
    ]);
    expect(
      (await dash.usageDaily(a, { from: T0, to: T0 + 5 * MINUTE })).reduce((n, d) => n + d.requests, 0),
    ).toBe(4);
  });

  it('migration 0010 folds the refusal rows an older database wrote into counts, and leaves the others', async () => {
    const olderDb = await createTestDatabase(dir, 'older.sqlite');
    const older = await openStore(olderDb.url, { sqliteSynchronous: 'NORMAL' });
    try {
      await older.migrate('0009_one_usage_index_per_account');
      const a = await fundedAccount(older, 1_000);
      const refused = (id: string, at: number, keyId = 'key_a') =>
        usageRow(a, id, {
          keyId,
          createdAt: at,
          promptTokens: 0,
          completionTokens: 0,
          status: 'error',
          errorCode: 'insufficient_balance',
          httpStatus: 402,
        });
      for (let i = 0; i < 5; i++) await recordOlderUsage(olderDb, refused(`x${i}`, T0 + i * 1_000));
      await recordOlderUsage(olderDb, refused('y0', T0 + MINUTE + 1));
      await recordOlderUsage(olderDb, refused('z0', T0 + 2, 'key_b'));
      // Not refusals: a served request, and an upstream failure after a hold.
      await recordOlderUsage(olderDb, usageRow(a, 'ok1', { createdAt: T0 + 3 }));
      await recordOlderUsage(
        olderDb,
        usageRow(a, 'fail1', {
          createdAt: T0 + 4,
          status: 'error',
          errorCode: 'provider_error',
          httpStatus: 502,
        }),
      );

      await older.migrate();

      expect(await olderDb.query('select request_id from usage order by request_id')).toEqual([
        { request_id: 'fail1' },
        { request_id: 'ok1' },
      ]);
      expect(
        await olderDb.query(
          'select minute_start, key_id, error_code, http_status, requests from refusals order by minute_start, key_id',
        ),
      ).toEqual([
        {
          minute_start: T0,
          key_id: 'key_a',
          error_code: 'insufficient_balance',
          http_status: 402,
          requests: 5,
        },
        {
          minute_start: T0,
          key_id: 'key_b',
          error_code: 'insufficient_balance',
          http_status: 402,
          requests: 1,
        },
        {
          minute_start: T0 + MINUTE,
          key_id: 'key_a',
          error_code: 'insufficient_balance',
          http_status: 402,
          requests: 1,
        },
      ]);
      expect((await older.ledgerCheck()).ok).toBe(true);
      // New refusals add to the folded counts.
      await older.recordRefusal(refusal(a, 'key_a', T0 + 59_000));
      expect(
        await olderDb.query('select requests from refusals where minute_start = ? and key_id = ?', [
          T0,
          'key_a',
        ]),
      ).toEqual([{ requests: 6 }]);
      if (TEST_DIALECT === 'sqlite') {
        const [table] = await olderDb.query<{ sql: string }>(
          "select sql from sqlite_master where name = 'refusals'",
        );
        expect(table?.sql).toMatch(/without rowid/i);
      }
    } finally {
      await older.close();
      await olderDb.drop();
    }
  });
});
