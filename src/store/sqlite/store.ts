import type SQLite from 'better-sqlite3';
import { type Kysely, sql } from 'kysely';
import { DEFAULT_SQLITE_CACHE_MB } from '../../config/index.js';
import { composeStore } from '../compose-store.js';
import { migrateDatabase } from '../migrations.js';
import { reportLimits } from '../report-limits.js';
import type { Database } from '../schema.js';
import { coldParts } from '../shared/cold-parts.js';
import { composeDashboard } from '../shared/compose-dashboard.js';
import type { SqlEngine } from '../shared/engine.js';
import type { OpenStoreOptions } from '../store-options.js';
import type { Store } from '../types.js';
import { SqliteCheckpointer } from './checkpointer.js';
import { SqliteKeyLookup } from './key-lookup.js';
import { SqliteLedger } from './ledger.js';
import { openSqlite } from './open.js';
import { SqliteReader } from './reader.js';
import { sqliteReports } from './reports.js';

/** The embedded store, with what tests and tools reach under it. */
export interface SqliteStore extends Store {
  readonly dialect: 'sqlite';
  readonly sharedByInstances: false;
  /** The query builder on the serving connection. */
  readonly kysely: Kysely<Database>;
  /** The serving connection. */
  readonly connection: SQLite.Database;
  /** The threads the dashboard's reports run on; none for an in-memory database. */
  readonly reader: SqliteReader | undefined;
}

/**
 * Opens the embedded store on one SQLite file (or `sqlite::memory:`): one connection, whose writers are
 * serialised by BEGIN IMMEDIATE. The money goes through the ledger's group commit (`ledger.ts`); the cold
 * queries through the query builder on the same connection; the dashboard's reports through reader
 * threads, started by the first report only (a CLI command or a server without dashboard traffic runs
 * none).
 */
export function openSqliteStore(
  url: string,
  options: OpenStoreOptions = { sqliteSynchronous: 'NORMAL' },
): SqliteStore {
  const cacheMb = options.sqliteCacheMb ?? DEFAULT_SQLITE_CACHE_MB;
  const { db, sqlite, file } = openSqlite(url, { synchronous: options.sqliteSynchronous, cacheMb });
  const onDisk = file !== ':memory:';
  const checkpointer =
    options.sqliteBackgroundCheckpoint && onDisk
      ? new SqliteCheckpointer(sqlite, file, options.sqliteBackgroundCheckpoint.onFailure)
      : undefined;
  const reports = options.reports ?? {};
  const reader = onDisk ? new SqliteReader(file, { cacheMb, reports }) : undefined;
  const reportRunner = sqliteReports(reader, reportLimits(reports).timeoutMs);
  const now = options.now ?? Date.now;
  const engine: SqlEngine = {
    db,
    now,
    // Every transaction begins with the write lock (BEGIN IMMEDIATE): a read locks nothing more.
    lockRows: (query) => query,
    snapshot: () => db.transaction(),
  };
  const ledger = new SqliteLedger(sqlite, db, now);
  const cold = coldParts(engine);
  const store = composeStore({
    dialect: 'sqlite',
    sharedByInstances: false,
    migrate: (target) => migrateDatabase(db, { target }),
    async close() {
      await ledger.close();
      await reader?.close();
      await checkpointer?.stop();
      await db.destroy();
    },
    async ping() {
      await sql`select 1`.execute(db);
    },
    dashboard: (clock) => composeDashboard(db, clock ?? now, reportRunner),
    ledger,
    ...cold,
    keyLookup: new SqliteKeyLookup(sqlite, cold.keys),
  });
  return { ...store, dialect: 'sqlite', sharedByInstances: false, kysely: db, connection: sqlite, reader };
}
