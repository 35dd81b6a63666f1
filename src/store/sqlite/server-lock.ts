import { existsSync, mkdirSync, realpathSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import SQLite from 'better-sqlite3';
import { databaseKindOf } from '../../config/database-kind.js';
import { sqlitePathOf } from './open.js';

/**
 * One server per SQLite file. A server releases every hold it finds open at start, as they can only
 * belong to a process that is gone — true only while no other server uses the file. So before the store
 * is opened, the server takes an exclusive lock that the OS drops when the process ends, however it ends,
 * and a second server on the same file refuses to start before it migrates or releases anything.
 *
 * The lock is SQLite's own, on a small side file `<database>.lock`: a connection in
 * `locking_mode=EXCLUSIVE` that has run one exclusive transaction keeps its exclusive lock until it is
 * closed. That gives, with nothing but better-sqlite3, the POSIX record lock SQLite uses on Linux and
 * macOS — dropped by the kernel when the process dies, SIGKILL included, so no stale lock survives a
 * crash — and SQLite's in-process lock table, which makes a second server in the same process refuse
 * too. The database file itself cannot carry it: an exclusive lock there would also shut out the CLI
 * commands (`credits add`, `keys revoke`, `backup`, …) that write and read while the server runs.
 */

/** Thrown when another server holds the database. */
export class DatabaseInUseError extends Error {
  constructor(
    readonly database: string,
    readonly lockFile: string,
  ) {
    super(
      `another Tollgate server (serve or demo) is running on ${database} (it holds ${lockFile}). ` +
        'Stop it first, or give this server a database of its own (DATABASE_URL); ' +
        'commands such as credits add, keys revoke and backup work while it runs.',
    );
    this.name = 'DatabaseInUseError';
  }
}

export interface ServerLock {
  /** The database file the lock stands for. */
  readonly database: string;
  /** The side file whose lock is held. */
  readonly lockFile: string;
  /** Drops the lock (idempotent); the process's exit drops it as well. */
  release(): void;
}

/**
 * How long to wait for the lock: long enough that two servers starting at the same instant do not both
 * give up (each briefly holds a shared lock while trying), far shorter than a start-up.
 */
const LOCK_WAIT_MS = 250;

/**
 * The database file a SQLite URL names, with symbolic links resolved, so two spellings of one file share
 * one lock. Undefined for `sqlite::memory:`.
 */
export function sqliteFileOf(url: string): string | undefined {
  const path = sqlitePathOf(url);
  if (path === ':memory:') return undefined;
  const file = resolve(path);
  if (existsSync(file)) return realpathSync(file);
  const dir = dirname(file);
  return existsSync(dir) ? join(realpathSync(dir), basename(file)) : file;
}

/**
 * Takes the one-server lock of the SQLite database `url` names, creating its directory if needed.
 * Undefined for PostgreSQL (instances share it by design, with instance heartbeats) and for an in-memory
 * SQLite database (private to its connection). Throws {@link DatabaseInUseError} when a server holds it.
 */
export function lockDatabaseForServer(url: string): ServerLock | undefined {
  if (databaseKindOf(url) !== 'sqlite') return undefined;
  const database = sqliteFileOf(url);
  if (database === undefined) return undefined;
  mkdirSync(dirname(database), { recursive: true });
  const lockFile = `${database}.lock`;
  const connection = new SQLite(lockFile, { timeout: LOCK_WAIT_MS });
  try {
    // No rollback journal beside the lock file: its one transaction writes nothing that matters.
    connection.pragma('journal_mode = MEMORY');
    connection.pragma('locking_mode = EXCLUSIVE');
    connection.exec('BEGIN EXCLUSIVE');
    connection.exec('COMMIT');
  } catch (err) {
    connection.close();
    if ((err as { code?: unknown }).code === 'SQLITE_BUSY') throw new DatabaseInUseError(database, lockFile);
    throw new Error(
      `could not lock ${lockFile} for the server: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  held.add(connection);
  return {
    database,
    lockFile,
    release() {
      if (!held.delete(connection)) return;
      connection.close();
    },
  };
}

/** The connections holding locks, kept reachable for as long as they hold them. */
const held = new Set<SQLite.Database>();
