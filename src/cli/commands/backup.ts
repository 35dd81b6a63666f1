import { databaseKindOf, loadConfig } from '../../config/index.js';
import { BackupError, backupSqlite } from '../../store/sqlite/backup.js';
import { CliError, usageError } from '../cli-error.js';
import type { Output } from '../output.js';

/**
 * `tollgate backup <file> [--force]` — a consistent online copy of the SQLite database while the server
 * runs (see docs/operations.md#backups). Refuses to replace an existing file unless `--force`.
 */
export async function backup(args: { files: readonly string[]; force: boolean }, out: Output): Promise<void> {
  const [file, ...extra] = args.files;
  if (file === undefined || file.trim() === '')
    throw usageError('backup needs the file to write: tollgate backup <file>');
  if (extra.length > 0) throw usageError(`backup takes one file, not ${args.files.length}`);
  const config = loadConfig();
  if (databaseKindOf(config.databaseUrl) !== 'sqlite') {
    throw new CliError(
      "backup copies the embedded SQLite database; back up PostgreSQL with its own tools (pg_dump, or your provider's snapshots)",
      1,
      'unsupported_database',
    );
  }
  try {
    const copy = await backupSqlite(config.databaseUrl, file, { force: args.force });
    out.result(
      { ok: true, source: copy.source, path: copy.path, bytes: copy.bytes },
      `Backed up ${copy.source} to ${copy.path} (${copy.bytes} bytes, quick_check ok).`,
    );
  } catch (err) {
    if (err instanceof BackupError) throw new CliError(err.message, 1, err.reason);
    throw err;
  }
}
