import { databaseKindOf } from '../config/database-kind.js';
import { openSqliteStore } from './sqlite/store.js';
import type { OpenStoreOptions } from './store-options.js';
import type { Store } from './types.js';

export { DatabaseUnavailableError } from './database-unavailable.js';
export { type OpenStoreOptions, storeOptionsFrom } from './store-options.js';
export type { Store } from './types.js';

/**
 * Opens the store a DATABASE_URL names, built for its database (`sqlite/store.ts`, `postgres/store.ts`).
 * Migrations are applied by `store.migrate()`.
 */
export async function openStore(
  url: string,
  options: OpenStoreOptions = { sqliteSynchronous: 'NORMAL' },
): Promise<Store> {
  const kind = databaseKindOf(url);
  if (kind === 'sqlite') return openSqliteStore(url, options);
  if (kind === 'postgres') {
    // Loaded only here: a SQLite deployment never loads the driver, nor pays for its memory.
    const { openPostgresStore } = await import('./postgres/store.js');
    return openPostgresStore(url, options);
  }
  throw new Error('DATABASE_URL: must start with sqlite: or postgres://');
}
