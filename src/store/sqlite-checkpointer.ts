import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type SQLite from 'better-sqlite3';

/** How often the background thread checkpoints the WAL into the database file. */
const DEFAULT_INTERVAL_MS = 250;
/** What the connection does again if the background thread stops: SQLite's default. */
const AUTOCHECKPOINT_PAGES = 1000;
/**
 * With the thread running, the serving connection still checkpoints once the WAL holds this many pages
 * (40 MB at 4 KiB): the backstop that lets the WAL start over (see the class comment).
 */
const DEFAULT_BACKSTOP_PAGES = 10_000;

// Runs in the worker: its own connection to the same file; PASSIVE never waits for the writer or readers.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file);
db.pragma('busy_timeout = 100');
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
const timer = setInterval(() => {
  try { checkpoint.run(); } catch (err) { if (err && err.code !== 'SQLITE_BUSY' && err.code !== 'SQLITE_LOCKED') throw err; }
}, workerData.intervalMs);
parentPort.on('message', (m) => {
  if (m !== 'stop') return;
  clearInterval(timer);
  try { checkpoint.run(); } catch {}
  db.close();
  parentPort.postMessage('stopped');
});
`;

/**
 * Moves most of SQLite's WAL checkpointing off the event loop. With `synchronous = NORMAL` a commit does
 * not fsync; the checkpoint does — and SQLite runs it inside whichever commit crosses 1,000 WAL pages,
 * stalling every request in flight for the copy and the fsyncs (~10 ms each time on the benchmark's
 * disk, four times a second at 200 requests/s). Here a worker thread with its own connection checkpoints
 * every 250 ms (PASSIVE: it never waits for the writer).
 *
 * The thread alone cannot bound the WAL: SQLite starts the WAL over only when a writer finds every frame
 * copied, and under steady writes new frames always arrive while the thread copies (the WAL reached 1.8 GB
 * in 50 s of benchmark). So the serving connection keeps a backstop, `wal_autocheckpoint` at 10,000 pages
 * instead of 1,000: when the WAL gets there, the commit that crosses it checkpoints inline as before, but
 * finds nearly everything already copied and synced by the thread — only the last moments' frames are
 * left — and, being the writer, finishes the job so the next transaction starts the WAL over. If the
 * thread dies, the connection checkpoints itself at SQLite's default again.
 */
export class SqliteCheckpointer {
  private readonly worker: Worker;
  private stopped = false;

  constructor(
    private readonly connection: SQLite.Database,
    file: string,
    onFailure: (err: unknown) => void,
    intervalMs = DEFAULT_INTERVAL_MS,
    /** The better-sqlite3 module the thread loads (tests point it elsewhere to make the thread fail). */
    driver = createRequire(import.meta.url).resolve('better-sqlite3'),
    backstopPages = DEFAULT_BACKSTOP_PAGES,
  ) {
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { driver, file, intervalMs } });
    this.worker.unref();
    connection.pragma(`wal_autocheckpoint = ${backstopPages}`);
    const fallBack = (err: unknown) => {
      if (this.stopped) return;
      this.stopped = true;
      if (connection.open) connection.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
      onFailure(err);
    };
    this.worker.once('error', fallBack);
    this.worker.once('exit', (code) => fallBack(new Error(`checkpoint thread exited with code ${code}`)));
  }

  /** Checkpoints once more and ends the thread; the connection checkpoints itself from here on. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    const done = new Promise<void>((resolve) => {
      this.worker.once('message', () => resolve());
      this.worker.once('exit', () => resolve());
    });
    this.worker.postMessage('stop');
    await Promise.race([done, new Promise((r) => setTimeout(r, 2_000).unref())]);
    await this.worker.terminate();
    if (this.connection.open) this.connection.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
  }
}
