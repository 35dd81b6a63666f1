import { type Config, loadConfig } from '../config/index.js';
import { openStore, storeOptionsFrom } from '../store/index.js';
import type { Account, Store } from '../store/types.js';
import { CliError, usageError } from './cli-error.js';

export async function withStore<T>(fn: (store: Store, config: Config) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const store = await openStore(config.databaseUrl, storeOptionsFrom(config));
  try {
    await store.migrate();
    return await fn(store, config);
  } finally {
    await store.close();
  }
}

const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,255}$/;

export function normalizeEmail(email: string | undefined): string {
  if (email === undefined) throw usageError('--email is required');
  const e = email.trim().toLowerCase();
  if (!EMAIL.test(e)) throw usageError(`--email: "${email}" is not an email address`);
  return e;
}

export async function accountByEmail(store: Store, email: string | undefined): Promise<Account> {
  const normalized = normalizeEmail(email);
  const account = await store.findAccountByEmail(normalized);
  if (!account) throw new CliError(`no account with email ${normalized}`, 1, 'account_not_found');
  return account;
}
