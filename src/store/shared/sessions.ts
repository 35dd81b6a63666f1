import type { NewSession, SessionRecord, Sessions } from '../dashboard-types.js';
import { toNumber } from '../schema.js';
import { toAccount } from './account-row.js';
import type { DashboardEngine } from './engine.js';

/** Dashboard sessions on either database: one row per signed-in browser. */
export class SessionQueries implements Sessions {
  constructor(private readonly engine: DashboardEngine) {}

  async createSession(session: NewSession): Promise<void> {
    await this.engine.db
      .insertInto('sessions')
      .values({
        id: session.id,
        account_id: session.accountId,
        created_at: session.createdAt,
        last_seen_at: session.createdAt,
        expires_at: session.expiresAt,
      })
      .execute();
  }

  async findSession(id: string): Promise<SessionRecord | undefined> {
    const row = await this.engine.db
      .selectFrom('sessions')
      .innerJoin('accounts', 'accounts.id', 'sessions.account_id')
      .select([
        'sessions.id as id',
        'sessions.created_at as session_created_at',
        'sessions.last_seen_at as last_seen_at',
        'sessions.expires_at as expires_at',
        'accounts.id as account_id',
        'accounts.email as email',
        'accounts.role as role',
        'accounts.status as status',
        'accounts.balance_nano as balance_nano',
        'accounts.created_at as created_at',
      ])
      .where('sessions.id', '=', id)
      .executeTakeFirst();
    if (!row) return undefined;
    return {
      id: row.id,
      accountId: row.account_id,
      createdAt: toNumber(row.session_created_at),
      lastSeenAt: toNumber(row.last_seen_at),
      expiresAt: toNumber(row.expires_at),
      account: toAccount({ ...row, id: row.account_id }),
    };
  }

  async touchSession(id: string, at: number): Promise<void> {
    await this.engine.db.updateTable('sessions').set({ last_seen_at: at }).where('id', '=', id).execute();
  }

  async deleteSession(id: string): Promise<void> {
    await this.engine.db.deleteFrom('sessions').where('id', '=', id).execute();
  }

  /** Ends every session of an account; returns how many there were. */
  async deleteAccountSessions(accountId: string): Promise<number> {
    const result = await this.engine.db
      .deleteFrom('sessions')
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** Deletes sessions past their absolute end or idle longer than `idleMs`. */
  async purgeSessions(now: number, idleMs: number): Promise<number> {
    const result = await this.engine.db
      .deleteFrom('sessions')
      .where((eb) => eb.or([eb('expires_at', '<=', now), eb('last_seen_at', '<=', now - idleMs)]))
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
