import type { Account, AccountRole, AccountStatus } from '../records.js';
import { type AccountsTable, toNumber } from '../schema.js';

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
