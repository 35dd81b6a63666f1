import type { Kysely, TransactionBuilder } from 'kysely';
import type { ReportRunner } from '../dashboard-types.js';
import type { Database } from '../schema.js';

/** A read that can lock the rows it reads (a SELECT of the query builder). */
export interface Lockable<Q> {
  forUpdate(): Q;
  forNoKeyUpdate(): Q;
}

/**
 * What the queries shared by both databases (this folder) need of the database they run on. Each database
 * gives its own (`sqlite/store.ts`, `postgres/store.ts`), so that a shared query never asks which one it is.
 */
export interface SqlEngine {
  readonly db: Kysely<Database>;
  readonly now: () => number;
  /**
   * Makes a read inside a transaction lock what it reads until the transaction ends, as another instance
   * may write the same rows meanwhile (PostgreSQL: `no key update` lets others insert rows that reference
   * the row; `update` does not). SQLite returns the read as it is: its transactions begin by taking the
   * database's write lock (BEGIN IMMEDIATE).
   */
  lockRows<Q extends Lockable<Q>>(query: Q, strength: 'update' | 'no key update'): Q;
  /** A transaction whose reads all see one snapshot of the database (for the ledger check). */
  snapshot(): TransactionBuilder<Database>;
}

/**
 * What the dashboard's queries (this folder) need: the query builder of the store they belong to (and so its
 * transactions' locking rules), the dashboard's clock, and where its reports run.
 */
export interface DashboardEngine {
  readonly db: Kysely<Database>;
  readonly now: () => number;
  /** Runs the queries that may read many rows, as the database's `ReportRunner` runs them. */
  readonly reports: ReportRunner;
}
