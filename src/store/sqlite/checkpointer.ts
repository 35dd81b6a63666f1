import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type SQLite from 'better-sqlite3';

/** How often the background thread checkpoints the WAL into the database file. */
const DEFAULT_INTERVAL_MS = 250;
/** What the connection does again if the background thread stops: SQLite's default. */
const AUTOCHECKPOINT_PAGES = 1000;
/**
 * Once the thread reports a WAL this long (16 MB at 4 KiB) and copied, the serving connection finishes the
 * checkpoint itself so that the WAL starts over (see the class comment).
 */
const DEFAULT_FINISH_PAGES = 4_000;
/**
 * With the thread running, the serving connection still checkpoints inside a commit once the WAL holds
 * this many pages (40 MB at 4 KiB): the backstop should the thread's reports not come.
 */
const DEFAULT_BACKSTOP_PAGES = 10_000;

// Runs in the worker: its own connection to the same file; PASSIVE never waits for the writer or readers.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file);
db.pragma('busy_timeout = 100');
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
let reported = '';
const timer = setInterval(() => {
  let result;
  try { result = checkpoint.get(); } catch (err) { if (err && err.code !== 'SQLITE_BUSY' && err.code !== 'SQLITE_LOCKED') throw err; }
  // { busy, log, checkpointed }: pages in the WAL, and how many of them are now in the database file. An
  // unchanged result (an idle server) is not reported again, so the event loop is not woken for nothing.
  if (!result || result.busy !== 0) return;
  const key = result.log + '/' + result.checkpointed;
  if (key === reported) return;
  reported = key;
  parentPort.postMessage({ log: result.log, checkpointed: result.checkpointed });
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
 * stalling every request in flight for the copy and the fsyncs, again and again under steady writes. Here a worker thread with its own connection checkpoints
 * every 250 ms (PASSIVE: it never waits for the writer).
 *
 * The thread alone cannot bound the WAL: SQLite starts the WAL over only when a writer finds every frame
 * copied, and under steady writes new frames always arrive while the thread copies, so the WAL would grow
 * without bound. So the serving connection finishes the job: when the thread reports that it
 * copied everything it saw and the WAL holds 4,000 pages or more, the connection checkpoints right away,
 * between two requests. Only the frames written during the thread's checkpoint are left to copy and sync,
 * so its fsyncs are much shorter than those of a full checkpoint inside a commit, and, the connection being the writer, the next transaction starts the WAL over. Should the reports not
 * come (a connection busy in a long transaction), `wal_autocheckpoint` at 10,000 pages instead of 1,000
 * is the backstop. If the thread dies, the connection checkpoints itself at SQLite's default again.
 */
export class SqliteCheckpointer {
  private readonly worker: Worker;
  private stopped = false;
  /** Checkpoints the serving connection finished after a report of the thread (read by tests). */
  finished = 0;

  constructor(
    private readonly connection: SQLite.Database,
    file: string,
    onFailure: (err: unknown) => void,
    intervalMs = DEFAULT_INTERVAL_MS,
    /** The better-sqlite3 module the thread loads (tests point it elsewhere to make the thread fail). */
    driver = createRequire(import.meta.url).resolve('better-sqlite3'),
    backstopPages = DEFAULT_BACKSTOP_PAGES,
    finishPages = DEFAULT_FINISH_PAGES,
  ) {
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { driver, file, intervalMs } });
    this.worker.unref();
    connection.pragma(`wal_autocheckpoint = ${backstopPages}`);
    this.worker.on('message', (m: unknown) => {
      if (this.stopped || !isProgress(m) || m.log < finishPages || m.checkpointed < m.log) return;
      // Not inside a transaction of this connection (a Kysely one spans awaits): the next report will do.
      if (!connection.open || connection.inTransaction) return;
      try {
        const [result] = connection.pragma('wal_checkpoint(PASSIVE)') as { busy: number }[];
        if (result?.busy === 0) this.finished += 1;
      } catch {
        // Busy (the thread began its next round): the next report, or the backstop, finishes it. Any other
        // failure (an I/O error) is the commits' to report: they write the same files.
      }
    });
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
      this.worker.on('message', (m) => {
        if (m === 'stopped') resolve();
      });
      this.worker.once('exit', () => resolve());
    });
    this.worker.postMessage('stop');
    await Promise.race([done, new Promise((r) => setTimeout(r, 2_000).unref())]);
    await this.worker.terminate();
    if (this.connection.open) this.connection.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
  }
}

function isProgress(m: unknown): m is { log: number; checkpointed: number } {
  return (
    typeof m === 'object' &&
    m !== null &&
    typeof (m as { log?: unknown }).log === 'number' &&
    typeof (m as { checkpointed?: unknown }).checkpointed === 'number'
  );
}
