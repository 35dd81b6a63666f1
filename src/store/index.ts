import { KyselyStore } from './kysely-store.js';
import { openSqlite } from './open-sqlite.js';
import type { Store } from './types.js';

export type { Store } from './types.js';

export interface OpenStoreOptions {
  sqliteSynchronous: 'NORMAL' | 'FULL';
  now?: () => number;
}

/** Opens the store a DATABASE_URL names. Migrations are applied by `store.migrate()`. */
export async function openStore(
  url: string,
  options: OpenStoreOptions = { sqliteSynchronous: 'NORMAL' },
): Promise<Store> {
  if (url.startsWith('sqlite:')) {
    const { db } = openSqlite(url, { synchronous: options.sqliteSynchronous });
    return new KyselyStore(db, 'sqlite', options.now);
  }
  if (/^postgres(ql)?:\/\//.test(url)) {
    throw new Error(
      'DATABASE_URL: PostgreSQL is not supported by this version yet; use the embedded SQLite store (sqlite:./data/tollgate.db)',
    );
  }
  throw new Error('DATABASE_URL: must start with sqlite: or postgres://');
}
