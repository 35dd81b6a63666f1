import type { Store, UsageRecord } from '../../src/store/types.js';

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
