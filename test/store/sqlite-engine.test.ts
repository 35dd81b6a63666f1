import { closeSync, mkdtempSync, openSync, readSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.js';
import { SqliteCheckpointer } from '../../src/store/sqlite/checkpointer.js';
import type { Store } from '../../src/store/types.js';
import {
  ANSWERED_USAGE_SQL,
  answeredUsageValues,
  isPlainAnswer,
  USAGE_COLUMNS,
  usageValues,
} from '../../src/store/usage-row.js';
import { fundedAccount, usageRow } from './store-fixtures.js';

let dir: string;
let file: string;
let store: Store;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-sqlite-engine-'));
  file = join(dir, 'db.sqlite');
});
afterEach(async () => {
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function open(background = false): Promise<Store> {
  store = await openStore(`sqlite:${file}`, {
    sqliteSynchronous: 'NORMAL',
    ...(background ? { sqliteBackgroundCheckpoint: { onFailure: () => {} } } : {}),
  });
  await store.migrate();
  return store;
}

/**
 * How many times SQLite started this WAL over: its header's checkpoint sequence number (bytes 12–15, big
 * endian), which each restart increments.
 */
function walRestarts(wal: string): number {
  const fd = openSync(wal, 'r');
  try {
    const header = Buffer.alloc(16);
    readSync(fd, header, 0, 16, 0);
    return header.readUInt32BE(12);
  } finally {
    closeSync(fd);
  }
}

/** Costs of 50 + 50: the 100 each settle below charges. */
const ENGINE_USAGE = { promptTokens: 1, completionTokens: 1, inputCostNano: 50, outputCostNano: 50 };

function hold(accountId: string, i: number, amountNano = 1_000) {
  return {
    holdId: `hold_${i}`,
    accountId,
    requestId: `req_${i}`,
    amountNano,
    owner: 'inst_test',
    createdAt: Date.now(),
    expiresAt: Date.now() + 60_000,
  };
}

describe('group commit', () => {
  it('operations queued in one turn commit together, and one that throws fails alone, leaving nothing behind', async () => {
    await open();
    const a = await fundedAccount(store, 100_000);
    const holds = await Promise.all(Array.from({ length: 20 }, (_, i) => store.placeHold(hold(a, i))));
    expect(holds.every((h) => h.ok)).toBe(true);

    // 19 good settles and, in the same group, one for an account that does not exist: that one throws
    // after its hold is closed, so without the retry its partial writes (or the others') would leak.
    const results = await Promise.allSettled([
      ...Array.from({ length: 19 }, (_, i) =>
        store.settle({
          holdId: `hold_${i}`,
          accountId: a,
          holdAmountNano: 1_000,
          costNano: 100,
          usage: usageRow(a, `req_${i}`, ENGINE_USAGE),
        }),
      ),
      store.settle({
        holdId: 'hold_19',
        accountId: 'acct_missing',
        holdAmountNano: 1_000,
        costNano: 100,
        usage: usageRow(a, 'req_19', ENGINE_USAGE),
      }),
    ]);
    expect(results.slice(0, 19).every((r) => r.status === 'fulfilled')).toBe(true);
    expect(results[19]?.status).toBe('rejected');

    const raw = new SQLite(file, { readonly: true });
    try {
      const usageRows = raw.prepare('select count(*) as n from usage').get() as { n: number };
      const charges = raw
        .prepare('select count(*) as n, sum(charged_nano) as s from usage where charged_nano > 0')
        .get() as {
        n: number;
        s: number;
      };
      const ledgerCharges = raw.prepare("select count(*) from ledger where kind = 'charge'").pluck().get();
      const holdsLeft = raw.prepare('select id from holds').pluck().all();
      const balance = raw.prepare('select balance_nano from accounts where id = ?').get(a) as {
        balance_nano: number;
      };
      expect(usageRows.n).toBe(19);
      expect(charges).toEqual({ n: 19, s: 1_900 });
      expect(ledgerCharges).toBe(0);
      // The 19 settled holds are deleted; the failed settle closed nothing.
      expect(holdsLeft).toEqual(['hold_19']);
      expect(balance.balance_nano).toBe(100_000 - 19 * 100 - 1_000); // hold_19 still held
    } finally {
      raw.close();
    }
    // The invariant the ledger check proves: nothing is lost or double counted.
    const check = await store.ledgerCheck();
    expect(check.problems).toEqual([]);
  });

  it('holds placed in one group never take more than the balance', async () => {
    await open();
    const a = await fundedAccount(store, 10_000);
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => store.placeHold(hold(a, i, 1_000))),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(10);
    expect(results.filter((r) => !r.ok).every((r) => !r.ok && r.reason === 'insufficient_balance')).toBe(
      true,
    );
  });

  it('each group reads the balance afresh: money another connection adds between groups counts in the next', async () => {
    await open();
    const a = await fundedAccount(store, 1_000);
    // Two holds of one account in one group: the balance covers only the first.
    const first = await Promise.all([store.placeHold(hold(a, 1, 600)), store.placeHold(hold(a, 2, 600))]);
    expect(first).toEqual([{ ok: true }, { ok: false, reason: 'insufficient_balance', balanceNano: 400 }]);

    // Another writer of the same file (the CLI's `credits add`, say) between two groups.
    const other = new SQLite(file);
    try {
      other.prepare('update accounts set balance_nano = balance_nano + 700 where id = ?').run(a);
    } finally {
      other.close();
    }
    // 1,100 now: with the first group's 400 these could not both be taken.
    const second = await Promise.all([store.placeHold(hold(a, 3, 500)), store.placeHold(hold(a, 4, 600))]);
    expect(second).toEqual([{ ok: true }, { ok: true }]);
    // A release and a hold it pays for, in one group.
    const [released, placed] = await Promise.all([
      store.release({ holdId: 'hold_1', accountId: a, holdAmountNano: 600, usage: null }),
      store.placeHold(hold(a, 5, 600)),
    ]);
    expect(released).toEqual({ balanceNano: 600 });
    expect(placed).toEqual({ ok: true });
    expect(await balanceOf(a)).toBe(0);
  });

  it('in one group, an account with several operations and accounts with one each all end exact', async () => {
    await open();
    const many = await fundedAccount(store, 10_000);
    const one = await fundedAccount(store, 10_000);
    const poor = await fundedAccount(store, 500);
    await store.placeHold(hold(many, 1, 1_000));
    await store.placeHold(hold(one, 2, 1_000));
    const settle = (accountId: string, i: number, costNano: number) =>
      store.settle({
        holdId: `hold_${i}`,
        accountId,
        holdAmountNano: 1_000,
        costNano,
        usage: usageRow(accountId, `req_${i}`, ENGINE_USAGE),
      });
    const results = await Promise.all([
      settle(many, 1, 100),
      store.placeHold(hold(many, 3, 4_000)),
      settle(one, 2, 100),
      store.placeHold(hold(poor, 4, 600)),
      store.placeHold(hold(many, 5, 5_900)),
      store.placeHold(hold(many, 6, 1)),
    ]);
    expect(results).toEqual([
      { balanceNano: 9_900, chargedNano: 100, shortfallNano: 0 },
      { ok: true },
      { balanceNano: 9_900, chargedNano: 100, shortfallNano: 0 },
      { ok: false, reason: 'insufficient_balance', balanceNano: 500 },
      { ok: true },
      { ok: false, reason: 'insufficient_balance', balanceNano: 0 },
    ]);
    expect(await balanceOf(many)).toBe(0);
    expect(await balanceOf(one)).toBe(9_900);
    expect(await balanceOf(poor)).toBe(500);
    expect((await store.ledgerCheck()).problems).toEqual([]);
  });

  it('close() commits what is still queued', async () => {
    await open();
    const a = await fundedAccount(store, 10_000);
    const pending = store.placeHold(hold(a, 1));
    await store.close();
    await expect(pending).resolves.toEqual({ ok: true });
    store = await openStore(`sqlite:${file}`, { sqliteSynchronous: 'NORMAL' });
    expect(await balanceOf(a)).toBe(9_000);
  });
});

describe('the usage row of a plain answer', () => {
  it('written with its six constant columns in the statement, is the row the general insert writes', async () => {
    await open();
    const a = await fundedAccount(store, 10_000);
    await store.close();
    const raw = new SQLite(file);
    try {
      const columns = USAGE_COLUMNS.join(', ');
      const general = raw.prepare(
        `insert into usage (${columns}) values (${USAGE_COLUMNS.map(() => '?').join(', ')})`,
      );
      const answered = raw.prepare(`insert into usage (${columns}) values (${ANSWERED_USAGE_SQL})`);
      const usage = usageRow(a, 'req_general', { inputCostNano: 120, outputCostNano: 340, durationMs: 17 });
      expect(isPlainAnswer(usage, 0)).toBe(true);
      general.run(...usageValues(usage, 0, 460));
      answered.run(...answeredUsageValues({ ...usage, requestId: 'req_answered' }, 460));
      const rows = raw
        .prepare('select * from usage where account_id = ? order by request_id')
        .all(a) as Record<string, unknown>[];
      expect(rows).toHaveLength(2);
      const [fromAnswered, fromGeneral] = rows as [Record<string, unknown>, Record<string, unknown>];
      expect(fromAnswered.request_id).toBe('req_answered');
      expect({ ...fromAnswered, request_id: 'x' }).toEqual({ ...fromGeneral, request_id: 'x' });
      expect(fromGeneral).toMatchObject({
        status: 'ok',
        error_code: null,
        http_status: 200,
        charged_nano: 460,
      });
    } finally {
      raw.close();
    }
  });

  it('is only a row with status ok, no error, HTTP 200, upstream usage, the client there and no shortfall', () => {
    const plain = usageRow('acct', 'req');
    expect(isPlainAnswer(plain, 0)).toBe(true);
    expect(isPlainAnswer(plain, 1)).toBe(false);
    expect(isPlainAnswer({ ...plain, status: 'error' }, 0)).toBe(false);
    expect(isPlainAnswer({ ...plain, errorCode: 'upstream_error' }, 0)).toBe(false);
    expect(isPlainAnswer({ ...plain, httpStatus: 502 }, 0)).toBe(false);
    expect(isPlainAnswer({ ...plain, usageEstimated: true }, 0)).toBe(false);
    expect(isPlainAnswer({ ...plain, clientGone: true }, 0)).toBe(false);
  });
});

async function balanceOf(accountId: string): Promise<number> {
  const raw = new SQLite(file, { readonly: true });
  try {
    return (
      raw.prepare('select balance_nano from accounts where id = ?').get(accountId) as { balance_nano: number }
    ).balance_nano;
  } finally {
    raw.close();
  }
}

describe('background WAL checkpoints', () => {
  it('below the backstop the serving connection does not checkpoint; the thread moves the WAL into the file', async () => {
    await open(true);
    const a = await fundedAccount(store, 1_000_000_000);
    const before = statSync(file).size;
    for (let round = 0; round < 40; round++) {
      await Promise.all(Array.from({ length: 25 }, (_, i) => store.placeHold(hold(a, round * 25 + i, 10))));
    }
    const deadline = Date.now() + 5_000;
    while (statSync(file).size <= before && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    // Only a checkpoint writes pages into the main file; the connection's own autocheckpoint is off.
    expect(statSync(file).size).toBeGreaterThan(before);
  });

  it('when the thread dies, the connection checkpoints itself again and the failure is reported', async () => {
    const db = new SQLite(file);
    db.pragma('journal_mode = WAL');
    const failures: unknown[] = [];
    const checkpointer = new SqliteCheckpointer(
      db,
      file,
      (err) => failures.push(err),
      50,
      '/nonexistent/driver.js',
    );
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(10_000);
    const deadline = Date.now() + 5_000;
    while (failures.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(failures).toHaveLength(1);
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    await checkpointer.stop();
    db.close();
  });

  it('under steady writes the connection finishes the checkpoint of the thread between requests, so the WAL starts over', async () => {
    // As a server writes: small transactions, then back to the event loop, where the thread's reports
    // arrive. The backstop is out of reach here, so only finishing after a report can start the WAL over.
    const db = new SQLite(file);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.exec('create table t (id integer primary key, v text)');
    const checkpointer = new SqliteCheckpointer(db, file, () => {}, 50, undefined, 1_000_000, 200);
    const insert = db.prepare('insert into t (v) values (?)');
    // Writes until the connection has finished two checkpoints and the WAL started over twice: how long
    // that takes depends on how often a busy machine lets the thread report, so the loop waits for the
    // counts, not for a time (the deadline only ends a loop that would never get there).
    const deadline = Date.now() + 20_000;
    let commits = 0;
    while (
      (commits < 6_000 || checkpointer.finished < 2 || walRestarts(`${file}-wal`) < 2) &&
      Date.now() < deadline
    ) {
      for (let i = 0; i < 20; i++) insert.run('x'.repeat(100));
      commits += 20;
      await new Promise((r) => setImmediate(r));
    }
    const restarts = walRestarts(`${file}-wal`);
    const finished = checkpointer.finished;
    await checkpointer.stop();
    db.close();
    // Finished after reports again and again, and the WAL started over.
    expect(restarts).toBeGreaterThanOrEqual(2);
    expect(finished).toBeGreaterThanOrEqual(2);
  });

  it('under writes that never pause, the WAL still starts over: the connection finishes at the backstop', async () => {
    // The thread copies a snapshot while new frames keep arriving, so on its own it never leaves the WAL
    // fully copied, and SQLite starts the WAL over only then. Without the backstop this loop never started
    // the WAL over (the WAL held a page per commit); with it, the WAL starts over again and again. How
    // often, and so how long the WAL grows in between, depends on how the thread and this loop share the
    // CPU, which a busy machine changes: the count of restarts is what the backstop controls.
    const db = new SQLite(file);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.exec('create table t (id integer primary key, v text)');
    const checkpointer = new SqliteCheckpointer(db, file, () => {}, 5, undefined, 200);
    const insert = db.prepare('insert into t (v) values (?)');
    const started = Date.now();
    let commits = 0;
    // Give the thread time to start and checkpoint several times while the writes go on.
    while (commits < 6_000 || Date.now() - started < 300) {
      insert.run('x'.repeat(100));
      commits++;
    }
    const walPages = statSync(`${file}-wal`).size / (db.pragma('page_size', { simple: true }) as number);
    const restarts = walRestarts(`${file}-wal`);
    await checkpointer.stop();
    db.close();
    expect(restarts).toBeGreaterThanOrEqual(2);
    expect(walPages).toBeLessThan(commits);
  });
});
