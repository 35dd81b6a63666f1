import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import SQLite from 'better-sqlite3';
import {
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  Kysely,
  SqliteDialect,
  type SqliteDialectConfig,
  SqliteDriver,
} from 'kysely';
import type { Database } from '../schema.js';

/**
 * Transactions start with BEGIN IMMEDIATE: the write lock is taken up front, so a CLI process and the
 * server writing the same file wait on busy_timeout instead of failing with SQLITE_BUSY on lock upgrade.
 */
class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

class ImmediateSqliteDialect extends SqliteDialect {
  constructor(private readonly dialectConfig: SqliteDialectConfig) {
    super(dialectConfig);
  }
  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.dialectConfig);
  }
}

/** `sqlite:./data/x.db`, `sqlite:/abs/x.db`, `sqlite:///abs/x.db` or `sqlite::memory:` → a file path. */
export function sqlitePathOf(url: string): string {
  let path = url.replace(/^sqlite:/, '');
  if (path.startsWith('//')) path = path.slice(2);
  if (path === '') throw new Error('DATABASE_URL: sqlite: needs a file path, e.g. sqlite:./data/tollgate.db');
  return path;
}

export interface SqliteOptions {
  /** NORMAL (default) or FULL; see docs/operations.md for what each can lose on power failure. */
  synchronous: 'NORMAL' | 'FULL';
  /** Most memory the connection's page cache may hold, in MiB. */
  cacheMb: number;
}

/** Opens (creating if needed) a SQLite database file in WAL mode. */
export function openSqlite(
  url: string,
  options: SqliteOptions,
): { db: Kysely<Database>; file: string; sqlite: SQLite.Database } {
  const path = sqlitePathOf(url);
  const file = path === ':memory:' ? path : resolve(path);
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const sqlite = new SQLite(file);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma(`synchronous = ${options.synchronous}`);
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma(`cache_size = ${-Math.round(options.cacheMb * 1024)}`);
  const db = new Kysely<Database>({ dialect: new ImmediateSqliteDialect({ database: sqlite }) });
  return { db, file, sqlite };
}
