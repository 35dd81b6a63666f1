/**
 * The records of accounts the store hands out, apart from `types.ts` so that the dashboard's contract
 * (`dashboard-types.ts`), which `types.ts` names, can use them without an import cycle. Money is integer nanodollars; times are
 * Unix epoch milliseconds.
 */

export type AccountRole = 'user' | 'admin';
export type AccountStatus = 'active' | 'disabled';

export interface Account {
  id: string;
  email: string;
  role: AccountRole;
  status: AccountStatus;
  /** Available balance: credits − charges − open holds. Never below zero. */
  balanceNano: number;
  createdAt: number;
}

export type UsageStatus = 'ok' | 'error';
