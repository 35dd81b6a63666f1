import type { PlaceHoldResult } from './types.js';

/**
 * A hold that changed nothing, worded from the account's figures: missing or disabled, inactive; otherwise
 * short of money.
 */
export function refusedHold(
  account: { balanceNano: number; status: string } | undefined,
): Extract<PlaceHoldResult, { ok: false }> {
  const reason = account?.status === 'active' ? 'insufficient_balance' : 'account_inactive';
  return { ok: false, reason, balanceNano: account ? account.balanceNano : 0 };
}
