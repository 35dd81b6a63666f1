import type { Config } from '../config/index.js';
import type { ReportLimits } from './report-limits.js';

/** How the PostgreSQL store opens its pool (`postgres/open.ts`); declared here, with the options it is part of. */
export interface PostgresOptions {
  /** Most connections this process opens (`DATABASE_POOL_MAX`). */
  poolMax: number;
  /** Server-side limit of one statement (`DATABASE_STATEMENT_TIMEOUT_MS`). */
  statementTimeoutMs: number;
  /** Limit of opening a connection, or of waiting for a free one in the pool (`DATABASE_CONNECT_TIMEOUT_MS`). */
  connectTimeoutMs: number;
  /**
   * Run the statements registered in `prepared-statements.ts` as named prepared statements
   * (`DATABASE_PREPARED_STATEMENTS`); off, every statement is sent unnamed, as a pooler in transaction
   * mode without prepared-statement support needs.
   */
  preparedStatements: boolean;
  /** Told when the database stops answering, and when it answers again (for the server's log). */
  onAvailabilityChange?: (available: boolean, cause?: unknown) => void;
  /** Told when a statement was cancelled by the statement timeout (the database itself answers). */
  onStatementTimeout?: (cause: unknown) => void;
}

export interface OpenStoreOptions {
  sqliteSynchronous: 'NORMAL' | 'FULL';
  /** SQLite page cache of the connection, in MiB (default: the configuration's DEFAULT_SQLITE_CACHE_MB). */
  sqliteCacheMb?: number;
  now?: () => number;
  /**
   * SQLite: checkpoint the WAL from a background thread instead of inside commits (long-running servers;
   * see sqlite/checkpointer.ts). `onFailure` hears if that thread stops (the connection then does it).
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
