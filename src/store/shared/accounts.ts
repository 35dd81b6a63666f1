import { newId } from '../new-id.js';
import type { NewAccountRow } from '../schema.js';
import { NO_SPEND, SPEND_COLUMNS, spendAt, spendCountersOf } from '../spend.js';
import type { Account, AccountRole, Accounts } from '../types.js';
import { insertAccountIfEmailFree, toAccount } from './account-row.js';
import type { SqlEngine } from './engine.js';

/** Accounts on either database. Their balances change only through the ledger. */
export class AccountQueries implements Accounts {
  constructor(private readonly engine: SqlEngine) {}

  async createAccount(input: { email: string; role: AccountRole; passwordHash: string | null }) {
    const row: NewAccountRow = {
      id: newId('acct'),
      email: input.email,
      role: input.role,
      status: 'active',
      password_hash: input.passwordHash,
      balance_nano: 0,
      created_at: this.engine.now(),
    };
    if (!(await insertAccountIfEmailFree(this.engine.db, row))) {
      return { ok: false as const, reason: 'email_taken' as const };
    }
    return { ok: true as const, account: toAccount(row) };
  }

  async getAccount(id: string): Promise<Account | undefined> {
    const row = await this.engine.db
      .selectFrom('accounts')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirst();
    return row && toAccount(row);
  }

  async findAccountByEmail(email: string): Promise<Account | undefined> {
    const row = await this.engine.db
      .selectFrom('accounts')
      .selectAll()
      .where('email', '=', email)
      .executeTakeFirst();
    return row && toAccount(row);
  }

  async spendOf(accountId: string, now: number): Promise<{ todayNano: number; monthNano: number }> {
    const row = await this.engine.db
      .selectFrom('accounts')
      .select(SPEND_COLUMNS)
      .where('id', '=', accountId)
      .executeTakeFirst();
    return spendAt(row ? spendCountersOf(row) : NO_SPEND, now);
  }
}
