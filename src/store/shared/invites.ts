import type { InviteRecord, Invites, SignUpResult } from '../dashboard-types.js';
import { newId } from '../new-id.js';
import { type NewAccountRow, toNumber, toNumberOrNull } from '../schema.js';
import { insertAccountIfEmailFree, toAccount } from './account-row.js';
import type { DashboardEngine } from './engine.js';

class InviteRefused extends Error {}

/** Every column of an invite, as `toInvite` reads them. */
const INVITE_COLUMNS = [
  'id',
  'email',
  'note',
  'created_by',
  'created_at',
  'expires_at',
  'used_at',
  'used_by',
  'revoked_at',
] as const;

/** Invites on either database, and the sign-up that claims one. */
export class InviteQueries implements Invites {
  constructor(private readonly engine: DashboardEngine) {}

  /**
   * Whether an invite could open an account for `email` now: unused, not withdrawn, not expired, and for
   * this email or for anyone — the conditions of the claim in `signUp`, which stays the authority (it
   * re-checks under the row's lock, so two sign-ups racing for one code still get one account). Asked
   * first, so that a bogus or spent code is refused before the email is looked at: otherwise anyone could
   * learn which emails have accounts with any made-up code.
   */
  async inviteUsable(codeHash: string, email: string): Promise<boolean> {
    const row = await this.engine.db
      .selectFrom('invites')
      .select('id')
      .where('code_hash', '=', codeHash)
      .where('used_at', 'is', null)
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', this.engine.now())
      .where((eb) => eb.or([eb('email', 'is', null), eb('email', '=', email)]))
      .executeTakeFirst();
    return row !== undefined;
  }

  /**
   * Creates a user account from the sign-up form, claiming the invite (when one is given) in the same
   * transaction, so one code never opens two accounts. Both steps are single statements that re-check
   * their condition under the row's lock (insert-or-nothing on the unique email; update of an unused
   * invite), so two concurrent sign-ups cannot both pass, on SQLite or PostgreSQL.
   */
  async signUp(input: {
    email: string;
    passwordHash: string;
    inviteCodeHash: string | null;
  }): Promise<SignUpResult> {
    const now = this.engine.now();
    const row: NewAccountRow = {
      id: newId('acct'),
      email: input.email,
      role: 'user',
      status: 'active',
      password_hash: input.passwordHash,
      balance_nano: 0,
      created_at: now,
    };
    try {
      return await this.engine.db.transaction().execute(async (trx) => {
        if (!(await insertAccountIfEmailFree(trx, row))) {
          return { ok: false as const, reason: 'email_taken' as const };
        }
        if (input.inviteCodeHash !== null) {
          const claimed = await trx
            .updateTable('invites')
            .set({ used_at: now, used_by: row.id })
            .where('code_hash', '=', input.inviteCodeHash)
            .where('used_at', 'is', null)
            .where('revoked_at', 'is', null)
            .where('expires_at', '>', now)
            .where((eb) => eb.or([eb('email', 'is', null), eb('email', '=', input.email)]))
            .executeTakeFirst();
          // Throwing rolls the account back with the transaction.
          if (Number(claimed.numUpdatedRows) !== 1) throw new InviteRefused();
        }
        return { ok: true as const, account: toAccount(row) };
      });
    } catch (err) {
      if (err instanceof InviteRefused) return { ok: false, reason: 'invalid_invite' };
      throw err;
    }
  }

  async createInvite(input: {
    codeHash: string;
    createdBy: string;
    email: string | null;
    note: string | null;
    expiresAt: number;
  }): Promise<InviteRecord> {
    const row = {
      id: newId('inv'),
      code_hash: input.codeHash,
      created_by: input.createdBy,
      email: input.email,
      note: input.note,
      created_at: this.engine.now(),
      expires_at: input.expiresAt,
      used_at: null,
      used_by: null,
      revoked_at: null,
    };
    await this.engine.db.insertInto('invites').values(row).execute();
    return toInvite(row);
  }

  /** The latest invites, newest first. */
  async listInvites(limit: number): Promise<InviteRecord[]> {
    const rows = await this.engine.db
      .selectFrom('invites')
      .select(INVITE_COLUMNS)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit)
      .execute();
    return rows.map(toInvite);
  }

  async getInvite(id: string): Promise<InviteRecord | undefined> {
    const row = await this.engine.db
      .selectFrom('invites')
      .select(INVITE_COLUMNS)
      .where('id', '=', id)
      .executeTakeFirst();
    return row && toInvite(row);
  }

  /** Withdraws an unused invite. */
  async revokeInvite(id: string): Promise<'revoked' | 'not_found' | 'already_closed'> {
    return this.engine.db.transaction().execute(async (trx) => {
      const row = await trx
        .selectFrom('invites')
        .select(['used_at', 'revoked_at'])
        .where('id', '=', id)
        .executeTakeFirst();
      if (!row) return 'not_found';
      if (row.used_at !== null || row.revoked_at !== null) return 'already_closed';
      await trx.updateTable('invites').set({ revoked_at: this.engine.now() }).where('id', '=', id).execute();
      return 'revoked';
    });
  }
}

function toInvite(row: {
  id: string;
  email: string | null;
  note: string | null;
  created_by: string;
  created_at: string | number | bigint;
  expires_at: string | number | bigint;
  used_at: string | number | bigint | null;
  used_by: string | null;
  revoked_at: string | number | bigint | null;
}): InviteRecord {
  return {
    id: row.id,
    email: row.email,
    note: row.note,
    createdBy: row.created_by,
    createdAt: toNumber(row.created_at),
    expiresAt: toNumber(row.expires_at),
    usedAt: toNumberOrNull(row.used_at),
    usedBy: row.used_by,
    revokedAt: toNumberOrNull(row.revoked_at),
  };
}
