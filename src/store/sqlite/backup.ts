import { randomBytes } from 'node:crypto';
import { existsSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import SQLite from 'better-sqlite3';
import { sqlitePathOf } from './open.js';

/** SQLite's companion files of a database in WAL mode. */
const COMPANIONS = ['-wal', '-shm', '-journal'] as const;

export type BackupFailure =
  /** The destination (or a -wal/-shm/-journal file beside it) exists and `force` was not given. */
  | 'destination_exists'
  /** The destination's directory does not exist. */
  | 'no_destination_directory'
  /** There is no database file at DATABASE_URL. */
  | 'no_database'
  /** The copy did not pass SQLite's quick_check. */
  | 'copy_damaged';

export class BackupError extends Error {
  constructor(
    readonly reason: BackupFailure,
    message: string,
  ) {
    super(message);
    this.name = 'BackupError';
  }
}

/**
 * A consistent copy of a live SQLite database, made with SQLite's online backup API (through
 * better-sqlite3) while servers and CLI commands keep writing to it. All pages are copied in one step,
 * inside one read transaction, so the copy is the database as of one commit; in WAL mode readers do
 * not block writers, so the server is not paused. The copy is written to a temporary file beside the
 * destination, checked with `PRAGMA quick_check`, then renamed into place, so the destination is either
 * absent or a complete, checked copy. A stale `-wal`/`-shm` beside the destination would be replayed
 * into the copy when it is opened, so those count as "the destination exists" too.
 *
 * @see https://www.sqlite.org/backup.html
 * @see https://github.com/WiseLibs/better-sqlite3/blob/master/docs/api.md#backupdestination-options---promise
 */
export async function backupSqlite(
  databaseUrl: string,
  destination: string,
  options: { force: boolean },
): Promise<{ source: string; path: string; bytes: number }> {
  const source = resolve(sqlitePathOf(databaseUrl));
  const path = resolve(destination);
  if (source === path) throw new BackupError('destination_exists', 'The destination is the database itself.');
  if (!existsSync(dirname(path))) {
    throw new BackupError('no_destination_directory', `The directory ${dirname(path)} does not exist.`);
  }
  const present = [path, ...COMPANIONS.map((suffix) => path + suffix)].filter((p) => existsSync(p));
  if (present.length > 0 && !options.force) {
    throw new BackupError(
      'destination_exists',
      `${present.join(', ')} already exists; choose another file, or pass --force to replace it.`,
    );
  }
  if (!existsSync(source)) throw new BackupError('no_database', `There is no database at ${source}.`);

  const temporary = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.partial`);
  const db = new SQLite(source, { fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    // The first step only measures; returning the page count makes the next step copy everything.
    await db.backup(temporary, { progress: ({ totalPages }) => Math.max(totalPages, 1) });
  } catch (err) {
    removeWithCompanions(temporary);
    throw err;
  } finally {
    db.close();
  }

  const copy = new SQLite(temporary, { fileMustExist: true });
  let check: unknown;
  try {
    check = copy.pragma('quick_check', { simple: true });
  } finally {
    copy.close();
  }
  if (check !== 'ok') {
    removeWithCompanions(temporary);
    throw new BackupError('copy_damaged', `The copy failed SQLite's quick_check: ${String(check)}.`);
  }
  // Closing the last connection checkpoints and removes the copy's own -wal/-shm.
  for (const p of [path, ...COMPANIONS.map((suffix) => path + suffix)]) rmSync(p, { force: true });
  renameSync(temporary, path);
  return { source, path, bytes: statSync(path).size };
}

function removeWithCompanions(file: string): void {
  for (const p of [file, ...COMPANIONS.map((suffix) => file + suffix)]) rmSync(p, { force: true });
}
