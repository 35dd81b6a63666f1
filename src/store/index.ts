import { type Config, DEFAULT_SQLITE_CACHE_MB } from '../config/index.js';
import { KyselyStore } from './kysely-store.js';
import type { PostgresOptions } from './open-postgres.js';
import { openSqlite } from './open-sqlite.js';
import type { ReportLimits } from './report-limits.js';
import { SqliteCheckpointer } from './sqlite-checkpointer.js';
import { SqliteReader } from './sqlite-reader.js';
import type { Store } from './types.js';

export { DatabaseUnavailableError } from './database-unavailable.js';
export type { Store } from './types.js';

export interface OpenStoreOptions {
  sqliteSynchronous: 'NORMAL' | 'FULL';
  /** SQLite page cache of the connection, in MiB (default {@link DEFAULT_SQLITE_CACHE_MB}). */
  sqliteCacheMb?: number;
  now?: () => number;
  /**
   * SQLite: checkpoint the WAL from a background thread instead of inside commits (long-running servers;
   * see sqlite-checkpointer.ts). `onFailure` hears if that thread stops (the connection then does it).
   */
  sqliteBackgroundCheckpoint?: { onFailure: (err: unknown) => void };
  /**
   * PostgreSQL pool size, timeouts and prepared statements (defaults: 10 connections, 5 s statements, 3 s
   * to connect, prepared statements on).
   */
  postgres?: Partial<PostgresOptions>;
  /** The dashboard's reports: time bound and turns (defaults in `report-limits.ts`). */
  reports?: Partial<ReportLimits>;
}

/** The store options a configuration names. */
export function storeOptionsFrom(
  config: Config,
  extra: Pick<PostgresOptions, 'onAvailabilityChange' | 'onStatementTimeout'> & { now?: () => number } = {},
): OpenStoreOptions {
  return {
    sqliteSynchronous: config.sqliteSynchronous,
    sqliteCacheMb: config.sqliteCacheMb,
    reports: { timeoutMs: config.dashboardReportTimeoutMs },
    ...(extra.now ? { now: extra.now } : {}),
    postgres: {
      poolMax: config.databasePoolMax,
      statementTimeoutMs: config.databaseStatementTimeoutMs,
      connectTimeoutMs: config.databaseConnectTimeoutMs,
      preparedStatements: config.databasePreparedStatements,
      ...(extra.onAvailabilityChange ? { onAvailabilityChange: extra.onAvailabilityChange } : {}),
      ...(extra.onStatementTimeout ? { onStatementTimeout: extra.onStatementTimeout } : {}),
    },
  };
}

/** Opens the store a DATABASE_URL names. Migrations are applied by `store.migrate()`. */
export async function openStore(
  url: string,
  options: OpenStoreOptions = { sqliteSynchronous: 'NORMAL' },
): Promise<Store> {
  if (url.startsWith('sqlite:')) {
    const cacheMb = options.sqliteCacheMb ?? DEFAULT_SQLITE_CACHE_MB;
    const { db, sqlite, file } = openSqlite(url, { synchronous: options.sqliteSynchronous, cacheMb });
    const onDisk = file !== ':memory:';
    const checkpointer =
      options.sqliteBackgroundCheckpoint && onDisk
        ? new SqliteCheckpointer(sqlite, file, options.sqliteBackgroundCheckpoint.onFailure)
        : undefined;
    // Started by the first report only: a CLI command or a server without dashboard traffic runs none.
    const reports = options.reports ?? {};
    const reader = onDisk ? new SqliteReader(file, { cacheMb, reports }) : undefined;
    return new KyselyStore(db, 'sqlite', options.now, undefined, sqlite, checkpointer, reader, reports);
  }
  if (/^postgres(ql)?:\/\//.test(url)) {
    const pgOptions: PostgresOptions = {
      poolMax: 10,
      statementTimeoutMs: 5_000,
      connectTimeoutMs: 3_000,
      preparedStatements: true,
      ...options.postgres,
    };
    // Loaded only here: a SQLite deployment never pays for the driver (~16 MB resident).
    const { openPostgres, openPostgresForMigrations } = await import('./open-postgres.js');
    const { db } = openPostgres(url, pgOptions);
    return new KyselyStore(
      db,
      'postgres',
      options.now,
      () => openPostgresForMigrations(url, pgOptions.connectTimeoutMs),
      undefined,
      undefined,
      undefined,
      options.reports,
    );
  }
  throw new Error('DATABASE_URL: must start with sqlite: or postgres://');
}
