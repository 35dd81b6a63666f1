import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { CompiledQuery } from 'kysely';
import { FairSlots, type ReportLimits, ReportTimeoutError, reportLimits } from '../report-limits.js';

/** After this long without a query the threads end (their memory with them); the next query starts one. */
const DEFAULT_IDLE_MS = 30_000;
/** Statements a thread keeps prepared; past that it starts over (the dashboard has a few dozen). */
const MAX_PREPARED = 256;
/**
 * A query still running this long after its deadline has not reached a time check (`REPORT_ALIVE_SQL`,
 * which a report's query tests every 1,024 rows): its caller gets the timeout anyway and its thread is
 * terminated. Terminating cannot stop SQLite inside a statement — the thread ends once the statement
 * returns — so the thread keeps its slot (and its account's) until it has really ended.
 */
const OVERRUN_GRACE_MS = 1_000;

/** The SQL function the reports' queries call to stop at their deadline (see `reportAlive`). */
export const REPORT_ALIVE_FUNCTION = 'tollgate_report_alive';
/** The code of the error that function throws past the deadline. */
const TIMEOUT_CODE = 'TOLLGATE_REPORT_TIMEOUT';

// Runs in the worker: a read-only connection of its own to the same file. WAL lets it read while the
// serving connection writes; each query sees what was committed when it started. better-sqlite3 has no way
// to interrupt a statement, so reports are bounded from inside: their queries call the function below
// (every 1,024 rows read, see `timeCheck` in reports.ts) with their deadline, and it throws once
// the deadline is past, which ends the statement with that error.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { readonly: true, fileMustExist: true });
db.pragma('busy_timeout = 5000');
db.pragma('cache_size = ' + -workerData.cacheKib);
db.function(workerData.aliveFunction, { deterministic: false }, (deadline) => {
  if (Date.now() <= deadline) return 1;
  const error = new Error('the report ran past its deadline');
  error.code = workerData.timeoutCode;
  throw error;
});
const prepared = new Map();
parentPort.on('message', (m) => {
  let reply;
  try {
    let statement = prepared.get(m.sql);
    if (!statement) {
      statement = db.prepare(m.sql);
      if (prepared.size >= workerData.maxPrepared) prepared.clear();
      prepared.set(m.sql, statement);
    }
    if (!statement.reader) throw new Error('the reader thread runs queries that return rows only');
    reply = { id: m.id, rows: statement.all(m.parameters) };
  } catch (err) {
    reply = { id: m.id, error: { message: String((err && err.message) || err), code: err && err.code } };
  }
  parentPort.postMessage(reply);
});
`;

interface Reply {
  id: number;
  rows?: unknown[];
  error?: { message: string; code?: string };
}

interface Job {
  id: number;
  sql: string;
  parameters: readonly unknown[];
  deadline: number | undefined;
  timeoutMs: number;
  resolve: (rows: unknown[]) => void;
  reject: (error: Error) => void;
  settled: boolean;
  overrun: NodeJS.Timeout | undefined;
}

interface Thread {
  worker: Worker;
  /** The query it runs; kept after an overrun until the thread has ended. */
  job: Job | undefined;
  /** Hands the slot back (the query answered, or the thread ended). */
  free: (() => void) | undefined;
  /** Terminated after an overrun: takes no more queries. */
  ending: boolean;
}

/** Who the query is for, and how long it may take. */
export interface ReaderQueryOptions {
  /** The account the report is for (`ADMIN_REPORTS` for reports over every account). */
  owner?: string;
  /** When the query must have answered (epoch ms); none: no bound. */
  deadline?: number;
  /** The bound the deadline came from, for the error's message. */
  timeoutMs?: number;
}

/**
 * An error of a query sent to the reader thread: SQLite's, with its code, or `unavailable` when the thread
 * could not run it (it failed to start or died), so the caller may run the query elsewhere.
 */
export class SqliteReaderError extends Error {
  constructor(
    message: string,
    readonly code?: string,
    readonly unavailable = false,
  ) {
    super(message);
    this.name = 'SqliteReaderError';
  }
}

/**
 * Runs the dashboard's reports on threads of their own. better-sqlite3 is synchronous: a query on the
 * serving connection holds the event loop until its last row, and a report over a large account — the
 * usage chart of 30 days, the spend of every key, a filter no index serves — reads up to every row of that
 * account, during which no API call of any account moves. Here they run on read-only connections in worker threads, and the event
 * loop goes on serving meanwhile.
 *
 * **Fair to every account.** Up to `slots` threads (2) run queries at once, at most `perAccount` (1) of them
 * for one account; the rest wait in a `FairQueue`, one account after another. So thirty reports of one
 * account never hold up another account's: it finds a thread free, or is next after at most one query of
 * each account ahead of it in line. Every query has a deadline (its report's time bound, waiting
 * included): one that cannot start by then fails without running, and one still running past it stops at
 * its next time check (see `WORKER_SOURCE`), both with `ReportTimeoutError`.
 *
 * Threads start with the first queries and end after {@link DEFAULT_IDLE_MS} without one, so a server
 * whose dashboard is not in use pays nothing for them (each thread holds a connection and its cache). If a thread fails to start
 * or dies, its query fails as `unavailable` (the dashboard then runs it on the serving connection) and
 * the next query starts a new thread.
 */
export class SqliteReader {
  private readonly threads = new Set<Thread>();
  private readonly slots: FairSlots;
  private readonly defaultTimeoutMs: number;
  private nextId = 1;
  private idleTimer: NodeJS.Timeout | undefined;
  private closed = false;
  /** Threads started so far (read by tests). */
  started = 0;

  constructor(
    private readonly file: string,
    private readonly options: {
      cacheMb: number;
      idleMs?: number;
      driver?: string;
      /**
       * Threads at most (`slots`), queries of one account at once, and the reports' time bound (named by
       * a timeout's message); defaults in `report-limits.ts`.
       */
      reports?: Partial<ReportLimits>;
    },
  ) {
    const limits = reportLimits(options.reports);
    this.defaultTimeoutMs = limits.timeoutMs;
    this.slots = new FairSlots(limits.slots, limits.perAccount);
  }

  /** The rows of a read-only query, read on a reader thread in the owner's turn. */
  all<R>(query: CompiledQuery<R>, options: ReaderQueryOptions = {}): Promise<R[]> {
    if (this.closed) return Promise.reject(new SqliteReaderError('the store is closed'));
    this.stopIdleTimer();
    const timeoutMs = options.timeoutMs ?? this.defaultTimeoutMs;
    return new Promise<R[]>((resolve, reject) => {
      const job: Job = {
        id: this.nextId++,
        sql: query.sql,
        parameters: query.parameters,
        deadline: options.deadline,
        timeoutMs,
        resolve: resolve as (rows: unknown[]) => void,
        reject,
        settled: false,
        overrun: undefined,
      };
      this.slots
        .run(
          options.owner ?? '',
          options.deadline,
          () => new ReportTimeoutError('waiting', timeoutMs),
          () => this.runOnThread(job),
        )
        .catch((error: unknown) => settle(job, error instanceof Error ? error : new Error(String(error))));
    });
  }

  /** Ends the threads; queries still waiting or running fail. */
  async close(): Promise<void> {
    this.closed = true;
    this.slots.cancelWaiting(new SqliteReaderError('the store was closed before this query ran'));
    await this.stop(new SqliteReaderError('the store was closed before this query ran'));
  }

  /** Runs the job on a free thread; resolves when that thread is free again (answered, or ended). */
  private runOnThread(job: Job): Promise<void> {
    if (job.settled) return Promise.resolve();
    this.stopIdleTimer();
    const thread = this.freeThread();
    return new Promise<void>((free) => {
      thread.job = job;
      thread.free = free;
      thread.worker.ref();
      if (job.deadline !== undefined) {
        job.overrun = setTimeout(
          () => this.overrun(thread, job),
          Math.max(0, job.deadline - Date.now()) + OVERRUN_GRACE_MS,
        );
      }
      thread.worker.postMessage({ id: job.id, sql: job.sql, parameters: job.parameters });
    });
  }

  /**
   * An idle thread, or a new one. Never more threads than slots: a query holds its slot until its thread
   * is free again, or has ended.
   */
  private freeThread(): Thread {
    for (const thread of this.threads) if (!thread.job && !thread.ending) return thread;
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        driver: this.options.driver ?? createRequire(import.meta.url).resolve('better-sqlite3'),
        file: this.file,
        cacheKib: Math.round(this.options.cacheMb * 1024),
        maxPrepared: MAX_PREPARED,
        aliveFunction: REPORT_ALIVE_FUNCTION,
        timeoutCode: TIMEOUT_CODE,
      },
    });
    this.started += 1;
    worker.unref();
    const thread: Thread = { worker, job: undefined, free: undefined, ending: false };
    worker.on('message', (reply: Reply) => this.answer(thread, reply));
    const fail = (message: string) => {
      if (!this.threads.has(thread)) return;
      this.threads.delete(thread);
      const job = thread.job;
      thread.job = undefined;
      if (job) {
        clearTimeout(job.overrun);
        settle(job, new SqliteReaderError(message, undefined, true));
      }
      const free = thread.free;
      thread.free = undefined;
      free?.();
      // A thread that ended after an overrun may have been the last one busy.
      this.idleIfUnused();
    };
    worker.once('error', (err) =>
      fail(`the reader thread failed: ${err instanceof Error ? err.message : err}`),
    );
    worker.once('exit', (code) => fail(`the reader thread exited with code ${code}`));
    this.threads.add(thread);
    return thread;
  }

  private answer(thread: Thread, reply: Reply): void {
    const job = thread.job;
    if (!job || job.id !== reply.id || thread.ending) return;
    thread.job = undefined;
    clearTimeout(job.overrun);
    if (reply.error?.code === TIMEOUT_CODE) settle(job, new ReportTimeoutError('running', job.timeoutMs));
    else if (reply.error) settle(job, new SqliteReaderError(reply.error.message, reply.error.code));
    else settle(job, undefined, reply.rows ?? []);
    thread.worker.unref();
    const free = thread.free;
    thread.free = undefined;
    free?.();
    this.idleIfUnused();
  }

  /** The query passed its deadline without reaching a time check: its caller is answered now. */
  private overrun(thread: Thread, job: Job): void {
    if (thread.job !== job) return;
    settle(job, new ReportTimeoutError('running', job.timeoutMs));
    thread.ending = true;
    void thread.worker.terminate();
  }

  /** Nothing running or waiting: the threads no longer keep the process alive, and end if nothing comes. */
  private idleIfUnused(): void {
    if (this.closed || this.threads.size === 0 || this.slots.waiting > 0) return;
    for (const thread of this.threads) if (thread.job) return;
    this.stopIdleTimer();
    this.idleTimer = setTimeout(() => {
      this.idleTimer = undefined;
      for (const thread of this.threads) if (thread.job) return;
      if (this.slots.waiting === 0) void this.stop(new SqliteReaderError('the reader thread was stopped'));
    }, this.options.idleMs ?? DEFAULT_IDLE_MS);
    this.idleTimer.unref();
  }

  private stopIdleTimer(): void {
    if (this.idleTimer) {
      clearTimeout(this.idleTimer);
      this.idleTimer = undefined;
    }
  }

  private async stop(error: Error): Promise<void> {
    this.stopIdleTimer();
    const threads = [...this.threads];
    for (const thread of threads) {
      if (thread.job) settle(thread.job, error);
      thread.ending = true;
    }
    await Promise.all(threads.map((thread) => thread.worker.terminate()));
  }
}

function settle(job: Job, error: Error | undefined, rows: unknown[] = []): void {
  if (job.settled) return;
  job.settled = true;
  clearTimeout(job.overrun);
  if (error) job.reject(error);
  else job.resolve(rows);
}
