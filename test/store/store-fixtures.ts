import type { Store, UsageRecord } from '../../src/store/types.js';
import { USAGE_COLUMNS, usageValues } from '../../src/store/usage-row.js';
import type { TestDatabase } from '../helpers/test-database.js';

/** A new user account (random e-mail) holding `credit` nanodollars; returns its id. */
export async function fundedAccount(store: Store, credit: number): Promise<string> {
  const created = await store.createAccount({
    email: `a${Math.random()}@x.test`,
    role: 'user',
    passwordHash: null,
  });
  if (!created.ok) throw new Error('account');
  if (credit > 0) await store.addCredit({ accountId: created.account.id, amountNano: credit, note: null });
  return created.account.id;
}

/** A successful call's usage row, with `overrides` on top. */
export function usageRow(
  accountId: string,
  requestId: string,
  overrides: Partial<UsageRecord> = {},
): UsageRecord {
  return {
    requestId,
    accountId,
    keyId: 'key_x',
    provider: 'prov-deepseek',
    model: 'm',
    promptTokens: 10,
    completionTokens: 5,
    usageEstimated: false,
    inputCostNano: 0,
    outputCostNano: 0,
    status: 'ok',
    errorCode: null,
    httpStatus: 200,
    durationMs: 1,
    clientGone: false,
    createdAt: Date.now(),
    ...overrides,
  };
}

/**
 * Writes a usage row into a database migrated to a point before 0013: the store's own insert names the
 * columns 0013 added (`cache_read_tokens`, `cache_write_tokens`), so the row goes in without them.
 */
export async function recordOlderUsage(db: TestDatabase, usage: UsageRecord): Promise<void> {
  const count = USAGE_COLUMNS.indexOf('cache_read_tokens');
  const columns = USAGE_COLUMNS.slice(0, count);
  await db.query(
    `insert into usage (${columns.join(', ')}) values (${columns.map(() => '?').join(', ')})`,
    usageValues(usage, 0, 0).slice(0, count),
  );
}
