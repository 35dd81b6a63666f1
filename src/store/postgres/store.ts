import { type Kysely, sql } from 'kysely';
import { composeStore } from '../compose-store.js';
import { migrateDatabase } from '../migrations.js';
import { reportLimits } from '../report-limits.js';
import type { Database } from '../schema.js';
import { coldParts } from '../shared/cold-parts.js';
import { composeDashboard } from '../shared/compose-dashboard.js';
import type { SqlEngine } from '../shared/engine.js';
import type { OpenStoreOptions, PostgresOptions } from '../store-options.js';
import type { Store } from '../types.js';
import { PostgresLedger } from './ledger.js';
import { openPostgres, openPostgresForMigrations } from './open.js';
import { postgresReports } from './reports.js';

/** The PostgreSQL store, with what tests and tools reach under it. */
export interface PostgresStore extends Store {
  readonly dialect: 'postgres';
  readonly sharedByInstances: true;
  /** The query builder on the pool. */
  readonly kysely: Kysely<Database>;
}

/**
 * Opens the store on a PostgreSQL database that several instances may share: a pool of connections, each
 * statement bounded in time (`open.ts`). The money goes through the single statements and row-locked
 * transactions of `ledger.ts`; the cold queries through the query builder; the dashboard's reports through
 * the pool, a few at a time (`reports.ts`).
 */
export function openPostgresStore(
  url: string,
  options: OpenStoreOptions = { sqliteSynchronous: 'NORMAL' },
): PostgresStore {
  const pgOptions: PostgresOptions = {
    poolMax: 10,
    statementTimeoutMs: 5_000,
    connectTimeoutMs: 3_000,
    preparedStatements: true,
    ...options.postgres,
  };
  const { db } = openPostgres(url, pgOptions);
  const now = options.now ?? Date.now;
  const engine: SqlEngine = {
    db,
    now,
    lockRows: (query, strength) => (strength === 'update' ? query.forUpdate() : query.forNoKeyUpdate()),
    // Its default READ COMMITTED gives each statement a snapshot of its own.
    snapshot: () => db.transaction().setIsolationLevel('repeatable read'),
  };
  const ledger = new PostgresLedger(db, now);
  const cold = coldParts(engine);
  const reports = postgresReports(db, reportLimits(options.reports));
  const store = composeStore({
    dialect: 'postgres',
    sharedByInstances: true,
    migrate: (target) => migrate(url, pgOptions.connectTimeoutMs, target),
    async close() {
      await ledger.close();
      await db.destroy();
    },
    async ping() {
      await sql`select 1`.execute(db);
    },
    dashboard: (clock) => composeDashboard(db, clock ?? now, reports),
    ledger,
    ...cold,
    keyLookup: cold.keys,
  });
  return { ...store, dialect: 'postgres', sharedByInstances: true, kysely: db };
}

/**
 * Migrates on a connection of its own, without the statement timeout (a schema change on a large table may
 * take longer than any request should), closed after.
 */
async function migrate(url: string, connectTimeoutMs: number, target: string | undefined): Promise<void> {
  const db = openPostgresForMigrations(url, connectTimeoutMs);
  try {
    // The migrator's own tables live in the schema the connection works in (the first of its search_path);
    // without naming it, the migrator mistakes another schema's tables for its own.
    const found = await sql<{ schema: string }>`select current_schema() as schema`
      .execute(db)
      .catch((err: unknown) => {
        throw new Error(`cannot reach the database: ${err instanceof Error ? err.message : String(err)}`);
      });
    await migrateDatabase(db, { target, migrationTableSchema: found.rows[0]?.schema });
  } finally {
    await db.destroy();
  }
}
