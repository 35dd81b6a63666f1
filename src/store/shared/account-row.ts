import type { Kysely } from 'kysely';
import type { Account, AccountRole, AccountStatus } from '../records.js';
import { type AccountsTable, type Database, type NewAccountRow, toNumber } from '../schema.js';

/** The columns of an account that `toAccount` reads. */
export const ACCOUNT_COLUMNS = ['id', 'email', 'role', 'status', 'balance_nano', 'created_at'] as const;

/** An account as the store hands it out, from its row. */
export function toAccount(
  row: Pick<AccountsTable, 'id' | 'email' | 'role' | 'status' | 'balance_nano' | 'created_at'>,
): Account {
  return {
    id: row.id,
    email: row.email,
    role: row.role as AccountRole,
    status: row.status as AccountStatus,
    balanceNano: toNumber(row.balance_nano),
    createdAt: toNumber(row.created_at),
  };
}

/**
 * Inserts the account unless its email is taken; false when it is. One statement: two concurrent sign-ups
 * of one email (two instances) cannot both pass a check.
 */
export async function insertAccountIfEmailFree(db: Kysely<Database>, row: NewAccountRow): Promise<boolean> {
  const inserted = await db
    .insertInto('accounts')
    .values(row)
    .onConflict((oc) => oc.column('email').doNothing())
    .executeTakeFirst();
  return Number(inserted.numInsertedOrUpdatedRows ?? 0) === 1;
}
