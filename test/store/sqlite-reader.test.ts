import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { CompiledQuery } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ReportTimeoutError } from '../../src/store/report-limits.js';
import { composeDashboard } from '../../src/store/shared/compose-dashboard.js';
import { REPORT_ALIVE_FUNCTION, SqliteReader, SqliteReaderError } from '../../src/store/sqlite/reader.js';
import { sqliteReports } from '../../src/store/sqlite/reports.js';
import { openSqliteStore } from '../../src/store/sqlite/store.js';

let dir: string;
let file: string;
let db: SQLite.Database;
const readers: SqliteReader[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-reader-'));
  file = join(dir, 'db.sqlite');
  db = new SQLite(file);
  db.pragma('journal_mode = WAL');
  db.exec('create table t (id integer primary key, v text not null)');
});
afterEach(async () => {
  for (const r of readers.splice(0)) await r.close();
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

function reader(idleMs?: number): SqliteReader {
  const r = new SqliteReader(file, { cacheMb: 2, ...(idleMs === undefined ? {} : { idleMs }) });
  readers.push(r);
  return r;
}

const count = (n: number) =>
  CompiledQuery.raw(
    'with recursive c(x) as (select 1 union all select x + 1 from c where x < ?) select count(*) as n, sum(x) as s from c',
    [n],
  );

/** The longest wait between ticks of a 5 ms interval while `run` is under way, and how long it took. */
async function loopGaps(
  run: () => Promise<unknown> | unknown,
): Promise<{ maxGapMs: number; tookMs: number }> {
  let last = performance.now();
  let maxGapMs = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    maxGapMs = Math.max(maxGapMs, now - last);
    last = now;
  }, 5);
  const started = performance.now();
  await new Promise((r) => setTimeout(r, 20));
  await run();
  const tookMs = performance.now() - started - 20;
  await new Promise((r) => setTimeout(r, 20));
  clearInterval(timer);
  return { maxGapMs, tookMs };
}

describe('the reader thread of the dashboard reports', () => {
  it('runs a long query off the event loop: timers keep firing, where the serving connection would hold them', async () => {
    // A query that holds the event loop for at least 300 ms when the serving connection runs it.
    let n = 1_000_000;
    let inline = { maxGapMs: 0, tookMs: 0 };
    let expected: unknown;
    for (;;) {
      const statement = db.prepare(count(n).sql);
      inline = await loopGaps(() => {
        expected = statement.get(n);
      });
      if (inline.tookMs >= 300 || n >= 64_000_000) break;
      n *= 2;
    }
    expect(inline.maxGapMs).toBeGreaterThanOrEqual(0.9 * inline.tookMs);

    const r = reader();
    let rows: unknown[] = [];
    const off = await loopGaps(async () => {
      rows = await r.all(count(n));
    });
    expect(rows).toEqual([expected]);
    expect(off.tookMs).toBeGreaterThanOrEqual(0.5 * inline.tookMs);
    expect(off.maxGapMs).toBeLessThan(0.5 * inline.tookMs);
  });

  it('reads what the serving connection committed, and answers in the order the queries were sent', async () => {
    const r = reader();
    const select = CompiledQuery.raw('select id, v from t order by id', []);
    expect(await r.all(select)).toEqual([]);
    db.prepare('insert into t (v) values (?)').run('one');
    expect(await r.all(select)).toEqual([{ id: 1, v: 'one' }]);
    db.prepare('insert into t (v) values (?)').run('two');
    // Sent together, a slow query first: the quick one waits its turn.
    const answered: string[] = [];
    const [, rows] = await Promise.all([
      r.all(count(300_000)).then(() => answered.push('slow')),
      r.all(select).then((found) => {
        answered.push('quick');
        return found;
      }),
    ]);
    expect(answered).toEqual(['slow', 'quick']);
    expect(rows).toEqual([
      { id: 1, v: 'one' },
      { id: 2, v: 'two' },
    ]);
  });

  it('rejects a bad query with the SQLite error and goes on; it never writes', async () => {
    const r = reader();
    const bad = r.all(CompiledQuery.raw('select nope from t', []));
    await expect(bad).rejects.toBeInstanceOf(SqliteReaderError);
    await expect(bad).rejects.toMatchObject({ code: 'SQLITE_ERROR', message: expect.stringMatching(/nope/) });
    await expect(
      r.all(CompiledQuery.raw("insert into t (v) values ('x') returning id", [])),
    ).rejects.toMatchObject({
      code: 'SQLITE_READONLY',
    });
    await expect(r.all(CompiledQuery.raw('delete from t', []))).rejects.toThrow(/return rows only/);
    expect(db.prepare('select count(*) as n from t').get()).toEqual({ n: 0 });
    expect(await r.all(CompiledQuery.raw('select count(*) as n from t', []))).toEqual([{ n: 0 }]);
    expect(r.started).toBe(1);
  });

  it('ends after a while without queries and starts again with the next one', async () => {
    const r = reader(50);
    expect(r.started).toBe(0);
    expect(await r.all(count(3))).toEqual([{ n: 3, s: 6 }]);
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect(await r.all(count(4))).toEqual([{ n: 4, s: 10 }]);
    expect(r.started).toBe(2);
  });

  it('a thread that cannot start fails its queries as unavailable, and the next query tries again', async () => {
    const broken = new SqliteReader(file, { cacheMb: 2, driver: join(dir, 'no-such-driver.js') });
    readers.push(broken);
    for (let i = 0; i < 2; i++) {
      await expect(broken.all(count(3))).rejects.toMatchObject({
        name: 'SqliteReaderError',
        unavailable: true,
        message: expect.stringMatching(/reader thread/),
      });
    }
    expect(broken.started).toBe(2);
    // A query SQLite refuses is not the thread being unavailable.
    await expect(reader().all(CompiledQuery.raw('select nope', []))).rejects.toMatchObject({
      unavailable: false,
    });
  });

  it('the dashboard runs its reports on the serving connection while the thread is unavailable', async () => {
    const storeDir = mkdtempSync(join(tmpdir(), 'tollgate-reader-store-'));
    const store = openSqliteStore(`sqlite:${join(storeDir, 'db.sqlite')}`);
    try {
      await store.migrate();
      const created = await store.createAccount({ email: 'reader@x.test', role: 'user', passwordHash: null });
      expect(created.ok).toBe(true);
      const broken = new SqliteReader(join(storeDir, 'db.sqlite'), {
        cacheMb: 2,
        driver: join(storeDir, 'no-such-driver.js'),
      });
      readers.push(broken);
      const dashboard = composeDashboard(store.kysely, Date.now, sqliteReports(broken, 5_000));
      expect((await dashboard.listAccounts({ limit: 10, search: 'reader' })).map((a) => a.email)).toEqual([
        'reader@x.test',
      ]);
      expect(broken.started).toBe(1);
      // And through a working thread, the same answer.
      const working = composeDashboard(store.kysely, Date.now, sqliteReports(store.reader, 5_000));
      expect((await working.listAccounts({ limit: 10, search: 'reader' })).map((a) => a.email)).toEqual([
        'reader@x.test',
      ]);
      expect(store.reader?.started).toBe(1);
    } finally {
      await store.close();
      rmSync(storeDir, { recursive: true, force: true });
    }
  });

  it('close fails the queries still waiting, and any sent after it', async () => {
    const r = reader();
    const waiting = r.all(count(50_000_000)).then(
      () => undefined,
      (error: unknown) => error,
    );
    await r.close();
    expect(await waiting).toMatchObject({
      name: 'SqliteReaderError',
      message: expect.stringMatching(/closed/),
    });
    await expect(r.all(count(3))).rejects.toThrow(/closed/);
  });
});

describe('the reader threads take turns by account, and bound every query', () => {
  /** A query that takes a while and never calls the time check. */
  const slow = (n = 3_000_000) => count(n);
  /** The same, calling the time check on every row: it stops at the deadline. */
  const checked = (deadline: number) =>
    CompiledQuery.raw(
      `with recursive c(x) as (select 1 union all select x + 1 from c where x < 100000000 and ${REPORT_ALIVE_FUNCTION}(?))
       select count(*) as n from c`,
      [deadline],
    );

  it('one thread: the accounts waiting are served in turn, not in the order their queries came', async () => {
    const r = new SqliteReader(file, { cacheMb: 2, reports: { slots: 1 } });
    readers.push(r);
    const answered: string[] = [];
    const send = (owner: string, name: string, query = count(3)) =>
      r.all(query, { owner }).then(() => answered.push(name));
    await Promise.all([
      send('a', 'a1', slow()),
      send('a', 'a2'),
      send('a', 'a3'),
      send('b', 'b1'),
      send('a', 'a4'),
      send('c', 'c1'),
    ]);
    // First come, first served would be a1 a2 a3 b1 a4 c1. In turns, b and c each wait for at most one more
    // query of a (a2: a was in line before them).
    expect(answered).toEqual(['a1', 'a2', 'b1', 'c1', 'a3', 'a4']);
  });

  it('two threads, one query per account at once: slow queries of one account leave a thread to another', async () => {
    const r = new SqliteReader(file, { cacheMb: 2 });
    readers.push(r);
    await r.all(count(3), { owner: 'warm' });
    const flood = Array.from({ length: 8 }, () => r.all(slow(), { owner: 'big' }));
    const started = performance.now();
    await r.all(count(3), { owner: 'small' });
    const small = performance.now() - started;
    const one = performance.now();
    await flood[0];
    const first = performance.now() - one;
    expect(small).toBeLessThan(first + 500);
    await Promise.all(flood);
    expect(r.started).toBe(2);
  });

  it('a query that cannot start before its deadline fails as waiting, without running', async () => {
    const r = new SqliteReader(file, { cacheMb: 2, reports: { slots: 1 } });
    readers.push(r);
    const first = r.all(slow(), { owner: 'a' });
    const late = r.all(count(3), { owner: 'b', deadline: Date.now() + 20, timeoutMs: 20 });
    await expect(late).rejects.toBeInstanceOf(ReportTimeoutError);
    await expect(late).rejects.toMatchObject({ stage: 'waiting', code: 'service_unavailable', status: 503 });
    await first;
  });

  it('a query calling the time check stops at its deadline, on the same thread', async () => {
    const r = new SqliteReader(file, { cacheMb: 2 });
    readers.push(r);
    await r.all(count(3));
    const deadline = Date.now() + 150;
    const started = performance.now();
    await expect(r.all(checked(deadline), { deadline, timeoutMs: 150 })).rejects.toMatchObject({
      name: 'ReportTimeoutError',
      stage: 'running',
    });
    expect(performance.now() - started).toBeLessThan(150 + 250);
    expect(await r.all(count(3))).toEqual([{ n: 3, s: 6 }]);
    expect(r.started).toBe(1);
  });

  it('a query past its deadline that never checks is answered anyway; its thread keeps its slot until it ends', async () => {
    const r = new SqliteReader(file, { cacheMb: 2, reports: { slots: 1 } });
    readers.push(r);
    await r.all(count(3));
    // Long enough to outlast the deadline and the grace after it.
    let n = 10_000_000;
    const statement = db.prepare(count(n).sql);
    const t = performance.now();
    statement.get(n);
    n = Math.ceil((n * 2_500) / Math.max(1, performance.now() - t));
    const deadline = Date.now() + 50;
    const started = performance.now();
    const overrun = r.all(count(n), { owner: 'a', deadline, timeoutMs: 50 });
    await expect(overrun).rejects.toMatchObject({ name: 'ReportTimeoutError', stage: 'running' });
    const answeredAfter = performance.now() - started;
    expect(answeredAfter).toBeLessThan(50 + 1_000 + 500);
    // The next query waits for the terminated thread to end, then runs on a new one.
    expect(await r.all(count(3), { owner: 'b' })).toEqual([{ n: 3, s: 6 }]);
    expect(r.started).toBe(2);
  });
});
