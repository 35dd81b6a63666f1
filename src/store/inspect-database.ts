import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, SqliteDialect, sql } from 'kysely';
import { databaseKindOf } from '../config/database-kind.js';
import type { Database } from './schema.js';
import { sqlitePathOf } from './sqlite/open.js';

/** What a database holds, as far as telling whose it is goes. */
export type DatabaseOwnership =
  /** Nothing yet: no SQLite file, an empty one, or a schema without tables. */
  | { kind: 'empty' }
  /** Tables, but not Tollgate's. */
  | { kind: 'foreign' }
  /**
   * A Tollgate database. `firstEmails`: the e-mails of its oldest accounts, those created in the first
   * millisecond any was (empty: no account yet). Ids are random, so between accounts created in the same
   * millisecond there is no telling which came first: all of them are given, at most two.
   */
  | { kind: 'tollgate'; firstEmails: string[] };

/**
 * Looks at the database `url` names without changing it (a SQLite file is opened read-only; nothing is
 * created): whether it is empty, someone else's, or Tollgate's, and then whose accounts came first.
 */
export async function inspectDatabase(url: string): Promise<DatabaseOwnership> {
  const opened = await openForCheck(url);
  if (!opened) return { kind: 'empty' };
  try {
    const accountsTable = await opened.hasAccountsTable();
    if (accountsTable === undefined) return { kind: 'empty' };
    if (!accountsTable) return { kind: 'foreign' };
    const first = await opened.db
      .selectFrom('accounts')
      .select('email')
      .where('created_at', '=', (eb) => eb.selectFrom('accounts').select(eb.fn.min('created_at').as('t')))
      .orderBy('email')
      .limit(2)
      .execute();
    return { kind: 'tollgate', firstEmails: first.map((row) => row.email) };
  } finally {
    await opened.db.destroy();
  }
}

interface OpenedForCheck {
  db: Kysely<Database>;
  /** Undefined: the database has no tables at all (a new PostgreSQL schema or an empty file). */
  hasAccountsTable: () => Promise<boolean | undefined>;
}

/** A connection for the check, or undefined when there is nothing to check (no SQLite file yet). */
async function openForCheck(url: string): Promise<OpenedForCheck | undefined> {
  if (databaseKindOf(url) === 'sqlite') {
    const path = sqlitePathOf(url);
    if (path === ':memory:') return undefined;
    const file = resolve(path);
    if (!existsSync(file) || statSync(file).size === 0) return undefined;
    const database = new SQLite(file, { readonly: true, fileMustExist: true });
    const db = new Kysely<Database>({ dialect: new SqliteDialect({ database }) });
    return {
      db,
      async hasAccountsTable() {
        const { rows } = await sql<{
          name: string;
        }>`select name from sqlite_master where type = 'table'`.execute(db);
        return rows.length === 0 ? undefined : rows.some((r) => r.name === 'accounts');
      },
    };
  }
  const { openPostgresForMigrations } = await import('./postgres/open.js');
  const db = openPostgresForMigrations(url, 3_000);
  return {
    db,
    async hasAccountsTable() {
      const { rows } = await sql<{
        present: boolean;
      }>`select to_regclass('accounts') is not null as present`.execute(db);
      // Another application's tables in the schema are not the demo's business: only Tollgate's are.
      return rows[0]?.present === true ? true : undefined;
    },
  };
}
