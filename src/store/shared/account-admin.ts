import type { AccountAdmin, LoginRecord, NewSession } from '../dashboard-types.js';
import type { Account, AccountStatus } from '../records.js';
import { ADMIN_REPORTS } from '../report-limits.js';
import { ACCOUNT_COLUMNS, toAccount } from './account-row.js';
import type { DashboardEngine } from './engine.js';

/** Logins, passwords and the administration of accounts, on either database. */
export class AccountAdminQueries implements AccountAdmin {
  constructor(private readonly engine: DashboardEngine) {}

  async findLogin(email: string): Promise<LoginRecord | undefined> {
    const row = await this.engine.db
      .selectFrom('accounts')
      .select([...ACCOUNT_COLUMNS, 'password_hash'])
      .where('email', '=', email)
      .executeTakeFirst();
    return row && { account: toAccount(row), passwordHash: row.password_hash };
  }

  async passwordHashOf(accountId: string): Promise<string | null | undefined> {
    const row = await this.engine.db
      .selectFrom('accounts')
      .select('password_hash')
      .where('id', '=', accountId)
      .executeTakeFirst();
    return row?.password_hash;
  }

  /**
   * Sets a new password hash and ends every session of the account, in one transaction; `session`, when
   * given, is the one new session that survives (the browser that changed the password).
   */
  async changePassword(input: {
    accountId: string;
    passwordHash: string;
    session: NewSession | undefined;
  }): Promise<void> {
    await this.engine.db.transaction().execute(async (trx) => {
      await trx
        .updateTable('accounts')
        .set({ password_hash: input.passwordHash })
        .where('id', '=', input.accountId)
        .execute();
      await trx.deleteFrom('sessions').where('account_id', '=', input.accountId).execute();
      if (input.session) {
        await trx
          .insertInto('sessions')
          .values({
            id: input.session.id,
            account_id: input.accountId,
            created_at: input.session.createdAt,
            last_seen_at: input.session.createdAt,
            expires_at: input.session.expiresAt,
          })
          .execute();
      }
    });
  }

  /** Enables or disables an account; disabling also ends its sessions (one transaction). */
  async setAccountStatus(accountId: string, status: AccountStatus): Promise<Account | undefined> {
    return this.engine.db.transaction().execute(async (trx) => {
      const updated = await trx
        .updateTable('accounts')
        .set({ status })
        .where('id', '=', accountId)
        .executeTakeFirst();
      if (Number(updated.numUpdatedRows) !== 1) return undefined;
      if (status === 'disabled')
        await trx.deleteFrom('sessions').where('account_id', '=', accountId).execute();
      const row = await trx
        .selectFrom('accounts')
        .select(ACCOUNT_COLUMNS)
        .where('id', '=', accountId)
        .executeTakeFirstOrThrow();
      return toAccount(row);
    });
  }

  /** Accounts in email order, after `afterEmail`, optionally those whose email contains `search`. */
  async listAccounts(options: { limit: number; afterEmail?: string; search?: string }): Promise<Account[]> {
    let query = this.engine.db.selectFrom('accounts').select(ACCOUNT_COLUMNS);
    if (options.afterEmail !== undefined) query = query.where('email', '>', options.afterEmail);
    if (options.search) query = query.where('email', 'like', `%${escapeLike(options.search)}%`);
    // A search reads every account whose email sorts after the cursor until the page fills.
    const rows = await this.engine.reports.run(ADMIN_REPORTS, (check) =>
      check(query, 'accounts').orderBy('email', 'asc').limit(options.limit),
    );
    return rows.map(toAccount);
  }
}

/**
 * A search term as a LIKE pattern without an ESCAPE clause (whose default differs between SQLite and
 * PostgreSQL): `%` and `\` are dropped; `_` (common in emails) stays, matching any one character, which
 * only widens a search.
 */
function escapeLike(term: string): string {
  return term.replace(/[%\\]/g, '');
}
