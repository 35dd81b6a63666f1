import type { Transaction } from 'kysely';
import {
  type KeyWindow,
  type KeyWindowRow,
  keyHold,
  keyRelease,
  keyWindowOf,
  limitRefusal,
} from '../key-window-rules.js';
import { hold } from '../ledger-rules.js';
import { refusedHold } from '../refused-hold.js';
import { type Database, toNumber } from '../schema.js';
import type { PlaceHoldInput, PlaceHoldResult } from '../types.js';

/**
 * Holds of keys with a spend limit on PostgreSQL: one transaction that locks the key's row, then the
 * account's (the order every transaction that takes both follows), applies the rules of
 * `key-window-rules.ts` and `ledger-rules.ts`, and writes both with the hold's row — or nothing. Instances
 * holding for the same key wait on its row, so the limit is never overspent whatever their number.
 */

/** The key's limit and window figures, its row locked until the transaction ends; undefined: no limit. */
export async function lockKeyWindow(
  trx: Transaction<Database>,
  keyId: string,
): Promise<KeyWindow | undefined> {
  const row = await trx
    .selectFrom('api_keys')
    .select(['limit_nano', 'limit_reset', 'window_start', 'window_spent_nano', 'window_held_nano'])
    .where('id', '=', keyId)
    .where('limit_nano', 'is not', null)
    .forUpdate()
    .executeTakeFirst();
  if (!row) return undefined;
  return keyWindowOf([
    row.limit_nano ?? 0,
    row.limit_reset ?? 'never',
    row.window_start ?? 0,
    row.window_spent_nano ?? 0,
    row.window_held_nano ?? 0,
  ] as KeyWindowRow);
}

export async function writeKeyWindow(
  trx: Transaction<Database>,
  keyId: string,
  key: KeyWindow,
): Promise<void> {
  await trx
    .updateTable('api_keys')
    .set({ window_start: key.windowStart, window_spent_nano: key.spentNano, window_held_nano: key.heldNano })
    .where('id', '=', keyId)
    .execute();
}

/** A closed hold of `held` leaves its key's window, when the key's limit counted it. */
export async function giveBackToKey(
  trx: Transaction<Database>,
  keyId: string | null,
  keyWindow: number | null,
  held: number,
): Promise<void> {
  if (keyId === null || keyWindow === null || held === 0) return;
  const key = await lockKeyWindow(trx, keyId);
  if (key) await writeKeyWindow(trx, keyId, keyRelease(key, keyWindow, held));
}

/** The hold of a key that has a limit (see above). */
export async function placeKeyedHold(
  trx: Transaction<Database>,
  input: PlaceHoldInput,
): Promise<PlaceHoldResult> {
  const keyId = input.keyId as string;
  const key = await lockKeyWindow(trx, keyId);
  const account = await trx
    .selectFrom('accounts')
    .select(['balance_nano', 'status'])
    .where('id', '=', input.accountId)
    .forNoKeyUpdate()
    .executeTakeFirst();
  if (!account || account.status !== 'active') {
    return refusedHold(account && { balanceNano: toNumber(account.balance_nano), status: account.status });
  }
  const balance = toNumber(account.balance_nano);
  let counted: KeyWindow | undefined;
  if (key) {
    const outcome = keyHold(key, input.createdAt, input.amountNano);
    if (!outcome.ok) {
      return {
        ok: false,
        reason: 'key_limit_exceeded',
        balanceNano: balance,
        key: limitRefusal(key, input.createdAt),
      };
    }
    counted = outcome.next;
  }
  const held = hold(balance, input.amountNano);
  if (!held.ok) {
    const refused = refusedHold({ balanceNano: balance, status: 'active' });
    if (key) refused.key = limitRefusal(key, input.createdAt);
    return refused;
  }
  await trx
    .updateTable('accounts')
    .set({ balance_nano: held.next })
    .where('id', '=', input.accountId)
    .execute();
  if (counted) await writeKeyWindow(trx, keyId, counted);
  await trx
    .insertInto('holds')
    .values({
      id: input.holdId,
      account_id: input.accountId,
      request_id: input.requestId,
      amount_nano: input.amountNano,
      owner: input.owner,
      created_at: input.createdAt,
      expires_at: input.expiresAt,
      key_id: keyId,
      key_window: counted ? counted.windowStart : null,
    })
    .execute();
  return { ok: true, keyWindow: counted ? counted.windowStart : null };
}
