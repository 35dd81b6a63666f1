import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { CompiledQuery } from 'kysely';

/** After this long without a query the thread ends (its memory with it); the next query starts another. */
const DEFAULT_IDLE_MS = 30_000;
/** Statements the thread keeps prepared; past that it starts over (the dashboard has a few dozen). */
const MAX_PREPARED = 256;

// Runs in the worker: a read-only connection of its own to the same file. WAL lets it read while the
// serving connection writes; each query sees what was committed when it started.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { readonly: true, fileMustExist: true });
db.pragma('busy_timeout = 5000');
db.pragma('cache_size = ' + -workerData.cacheKib);
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

interface Waiting {
  resolve: (rows: unknown[]) => void;
  reject: (error: Error) => void;
}

interface Reply {
  id: number;
  rows?: unknown[];
  error?: { message: string; code?: string };
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
 * Runs the dashboard's reports on a thread of their own. better-sqlite3 is synchronous: a query on the
 * serving connection holds the event loop until its last row, and a report over a large account — the
 * usage chart of 30 days, the spend of every key, a filter no index serves — reads up to every row of that
 * account: 0.16–0.52 s with a million rows (docs/performance.md, twenty-second round), during which no
 * API call of any account moves. Here they run on a read-only connection in a worker thread, and the event
 * loop goes on serving meanwhile.
 *
 * The thread starts with the first query and ends after {@link DEFAULT_IDLE_MS} without one, so a server
 * whose dashboard is not in use pays nothing for it (a thread costs ~10 MB). Queries run one at a time, in
 * the order sent. If the thread fails to start or dies, the queries waiting on it fail as `unavailable`
 * (the dashboard then runs them on the serving connection) and the next one starts a new thread.
 */
export class SqliteReader {
  private worker: Worker | undefined;
  private readonly waiting = new Map<number, Waiting>();
  private nextId = 1;
  private idleTimer: NodeJS.Timeout | undefined;
  private closed = false;
  /** Threads started so far (read by tests). */
  started = 0;

  constructor(
    private readonly file: string,
    private readonly options: { cacheMb: number; idleMs?: number; driver?: string },
  ) {}

  /** The rows of a read-only query, read on the reader thread. */
  all<R>(query: CompiledQuery<R>): Promise<R[]> {
    if (this.closed) return Promise.reject(new SqliteReaderError('the store is closed'));
    const worker = this.thread();
    if (this.idleTimer) {
      clearTimeout(this.idleTimer);
      this.idleTimer = undefined;
    }
    return new Promise<R[]>((resolve, reject) => {
      const id = this.nextId++;
      this.waiting.set(id, { resolve: resolve as (rows: unknown[]) => void, reject });
      if (this.waiting.size === 1) worker.ref();
      worker.postMessage({ id, sql: query.sql, parameters: query.parameters });
    });
  }

  /** Ends the thread; queries still waiting fail. */
  async close(): Promise<void> {
    this.closed = true;
    await this.stop(new SqliteReaderError('the store was closed before this query ran'));
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        driver: this.options.driver ?? createRequire(import.meta.url).resolve('better-sqlite3'),
        file: this.file,
        cacheKib: Math.round(this.options.cacheMb * 1024),
        maxPrepared: MAX_PREPARED,
      },
    });
    this.started += 1;
    worker.unref();
    worker.on('message', (reply: Reply) => this.answer(reply));
    const fail = (message: string) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.failAll(new SqliteReaderError(message, undefined, true));
    };
    worker.once('error', (err) =>
      fail(`the reader thread failed: ${err instanceof Error ? err.message : err}`),
    );
    worker.once('exit', (code) => fail(`the reader thread exited with code ${code}`));
    this.worker = worker;
    return worker;
  }

  private answer(reply: Reply): void {
    const waiting = this.waiting.get(reply.id);
    if (!waiting) return;
    this.waiting.delete(reply.id);
    if (reply.error) waiting.reject(new SqliteReaderError(reply.error.message, reply.error.code));
    else waiting.resolve(reply.rows ?? []);
    if (this.waiting.size === 0) this.idle();
  }

  /** Nothing waiting: the thread no longer keeps the process alive, and ends if nothing comes. */
  private idle(): void {
    this.worker?.unref();
    this.idleTimer = setTimeout(() => {
      this.idleTimer = undefined;
      if (this.waiting.size === 0) void this.stop(new SqliteReaderError('the reader thread was stopped'));
    }, this.options.idleMs ?? DEFAULT_IDLE_MS);
    this.idleTimer.unref();
  }

  private async stop(error: Error): Promise<void> {
    if (this.idleTimer) {
      clearTimeout(this.idleTimer);
      this.idleTimer = undefined;
    }
    const worker = this.worker;
    this.worker = undefined;
    this.failAll(error);
    if (worker) await worker.terminate();
  }

  private failAll(error: Error): void {
    const waiting = [...this.waiting.values()];
    this.waiting.clear();
    for (const w of waiting) w.reject(error);
  }
}
