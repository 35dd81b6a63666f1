import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { type Config, databaseKindOf, isSetInEnvironment, loadConfig } from '../config/index.js';
import type { NewAuditEntry } from '../store/dashboard-types.js';
import { openStore, storeOptionsFrom } from '../store/index.js';
import { sqlitePathOf } from '../store/sqlite/open.js';
import type { Account, Store } from '../store/types.js';
import { CliError, usageError } from './cli-error.js';
import type { Output } from './output.js';

export interface WithStoreOptions {
  /**
   * May the command create the SQLite database when there is none (`migrate`, `accounts create`)? The
   * others refuse: run with the wrong DATABASE_URL, or none, they would otherwise leave an empty database
   * behind and report on it as if it were the server's.
   */
  create?: { out: Output };
}

/** The SQLite file a URL names when it does not exist yet; undefined when it does (or is not a file). */
function missingSqliteFile(url: string): string | undefined {
  if (databaseKindOf(url) !== 'sqlite') return undefined;
  const path = sqlitePathOf(url);
  if (path === ':memory:') return undefined;
  const file = resolve(path);
  return existsSync(file) ? undefined : file;
}

export async function withStore<T>(
  fn: (store: Store, config: Config) => Promise<T>,
  options: WithStoreOptions = {},
): Promise<T> {
  const config = loadConfig();
  const missing = missingSqliteFile(config.databaseUrl);
  const urlSaid =
    !isSetInEnvironment('DATABASE_URL') && config.databaseUrl === DEFAULT_DATABASE_URL
      ? `DATABASE_URL is not set: the default, ${config.databaseUrl}`
      : `DATABASE_URL=${config.databaseUrl}`;
  if (missing !== undefined && !options.create) {
    throw new CliError(
      `no database at ${missing} (${urlSaid}). Set DATABASE_URL to the database the server uses, ` +
        'or create a new one with `tollgate migrate`.',
      1,
      'no_database',
    );
  }
  const store = await openStore(config.databaseUrl, storeOptionsFrom(config));
  try {
    await store.migrate();
    if (missing !== undefined) options.create?.out.info(`Created a new database at ${missing} (${urlSaid}).`);
    return await fn(store, config);
  } finally {
    await store.close();
  }
}

/** What the server uses without DATABASE_URL (src/config/load-config.ts). */
const DEFAULT_DATABASE_URL = 'sqlite:./data/tollgate.db';

const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,255}$/;

export function normalizeEmail(email: string | undefined): string {
  if (email === undefined) throw usageError('--email is required');
  const e = email.trim().toLowerCase();
  if (!EMAIL.test(e)) throw usageError(`--email: "${email}" is not an email address`);
  return e;
}

/** The account of an email already checked by `normalizeEmail` (before the database is opened). */
export async function accountByEmail(store: Store, email: string): Promise<Account> {
  const account = await store.findAccountByEmail(email);
  if (!account) throw new CliError(`no account with email ${email}`, 1, 'account_not_found');
  return account;
}

/** Writes an administrator's action done from the command line to the audit log (actor `cli`). */
export async function cliAudit(store: Store, entry: Omit<NewAuditEntry, 'actorId' | 'actor'>): Promise<void> {
  await store.dashboard().recordAudit({ actorId: null, actor: 'cli', ...entry });
}
