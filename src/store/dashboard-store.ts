import type { CompiledQuery, ExpressionBuilder, Kysely, RawBuilder, SqlBool } from 'kysely';
import { chargedOf } from './ledger-rules.js';
import { newId } from './new-id.js';
import type { Account, AccountStatus, UsageStatus } from './records.js';
import { ADMIN_REPORTS } from './report-limits.js';
import { type Database, type NewAccountRow, sumOf, toNumber, toNumberOrNull } from './schema.js';
import { ACCOUNT_COLUMNS, insertAccountIfEmailFree, toAccount } from './shared/account-row.js';

const DAY_MS = 86_400_000;

/** A live dashboard session and the account it belongs to. */
export interface SessionRecord {
  id: string;
  accountId: string;
  createdAt: number;
  lastSeenAt: number;
  expiresAt: number;
  account: Account;
}

export interface NewSession {
  id: string;
  accountId: string;
  createdAt: number;
  expiresAt: number;
}

/** What a login needs: the account and its password hash (null: the account cannot log in). */
export interface LoginRecord {
  account: Account;
  passwordHash: string | null;
}

export interface KeyWithSpend {
  id: string;
  name: string;
  hint: string;
  createdAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
  /** What the key's requests were charged, in nanodollars. */
  spendNano: number;
  /** The key's requests, refused ones included (as when each refusal had a usage row). */
  requests: number;
  /** Of those, the requests refused before any hold (402), counted apart since migration 0010. */
  refused: number;
}

export interface UsageFilters {
  keyId?: string | undefined;
  provider?: string | undefined;
  status?: UsageStatus | undefined;
  /** Inclusive lower bound, epoch ms. */
  from?: number | undefined;
  /** Exclusive upper bound, epoch ms. */
  to?: number | undefined;
}

/** Position after the last row of a page (newest-first order). */
export interface UsageCursor {
  createdAt: number;
  requestId: string;
}

/**
 * A row of the usage list: one request — or, for requests refused before any hold (402), the count of one
 * key's refusals with one error code in one minute (`requests` of them; `requestId` is
 * `refused-<minute start>-<key id>-<code>`, `createdAt` the minute's start).
 */
export interface UsageRow {
  requestId: string;
  createdAt: number;
  keyId: string;
  keyName: string | null;
  keyHint: string | null;
  provider: string | null;
  model: string | null;
  promptTokens: number;
  completionTokens: number;
  usageEstimated: boolean;
  /** What was charged: input + output cost − shortfall. */
  costNano: number;
  status: UsageStatus;
  errorCode: string | null;
  httpStatus: number;
  durationMs: number;
  clientGone: boolean;
  /** How many requests the row stands for: 1, or a refusal count. */
  requests: number;
}

/** Refused requests (402, before any hold) of an account per UTC day. */
export interface DailyRefusals {
  /** UTC day: floor(epoch ms / 86 400 000). */
  day: number;
  requests: number;
}

export interface DailyUsageRow {
  /** UTC day: floor(epoch ms / 86 400 000). */
  day: number;
  provider: string | null;
  requests: number;
  promptTokens: number;
  completionTokens: number;
  costNano: number;
}

export interface ProviderTraffic {
  provider: string;
  requests: number;
  errors: number;
}

export interface CreditEntry {
  id: string;
  amountNano: number;
  note: string | null;
  createdAt: number;
}

export interface InviteRecord {
  id: string;
  email: string | null;
  note: string | null;
  createdBy: string;
  createdAt: number;
  expiresAt: number;
  usedAt: number | null;
  usedBy: string | null;
  revokedAt: number | null;
}

class InviteRefused extends Error {}

export type SignUpResult =
  | { ok: true; account: Account }
  | { ok: false; reason: 'email_taken' | 'invalid_invite' };

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

/** A query a report runs: compiled for another connection, or executed where it was built. */
export interface ReportQuery<O> {
  compile(): CompiledQuery<O>;
  execute(): Promise<O[]>;
}

/**
 * Adds a time check to a report's query that may read many rows of `table`, where the database running it
 * needs one to stop at the report's time bound (SQLite's reader threads, `sqlite/reports.ts`); elsewhere it
 * returns the query as it is.
 */
export type TimeCheck = <QB extends { where(expression: RawBuilder<SqlBool>): QB }>(
  query: QB,
  table: 'usage' | 'accounts',
) => QB;

/**
 * Where the dashboard's reports run, in turns fair to every account and within their time bound: built per
 * database (`sqlite/reports.ts`, `postgres/reports.ts`). Past its bound a report fails with
 * `ReportTimeoutError` (503 `service_unavailable`).
 */
export interface ReportRunner {
  /** The rows of a report for `owner` (an account, or `ADMIN_REPORTS`); `build` makes its query. */
  run<O>(owner: string, build: (check: TimeCheck) => ReportQuery<O>): Promise<O[]>;
}

/** The query as it is. */
export const NO_TIME_CHECK: TimeCheck = (query) => query;

/** Reports run where the query builder runs every query, unbounded (an in-memory database, tests). */
export const DIRECT_REPORTS: ReportRunner = {
  run: (_owner, build) => build(NO_TIME_CHECK).execute(),
};

/**
 * The dashboard's repository: sessions, invites, sign-up, account administration and the read models
 * of the usage pages. It shares the query builder (and so the transactions' locking rules) of the store
 * it belongs to, and uses only the query builder, so it runs on SQLite and PostgreSQL alike. Every usage
 * query is bounded (a page, or a day range) and served by an index of migration 0003; the reports — the
 * queries that may read many rows — run where the database's `ReportRunner` runs them.
 */
export class DashboardStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly now: () => number = Date.now,
    private readonly reports: ReportRunner = DIRECT_REPORTS,
  ) {}

  /** The rows of a report for `owner` (an account, or `ADMIN_REPORTS`): a query that may read many rows. */
  private report<O>(owner: string, build: (check: TimeCheck) => ReportQuery<O>): Promise<O[]> {
    return this.reports.run(owner, build);
  }

  // ── sessions ─────────────────────────────────────────────────────────────

  async createSession(session: NewSession): Promise<void> {
    await this.db
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
    const row = await this.db
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
    await this.db.updateTable('sessions').set({ last_seen_at: at }).where('id', '=', id).execute();
  }

  async deleteSession(id: string): Promise<void> {
    await this.db.deleteFrom('sessions').where('id', '=', id).execute();
  }

  /** Ends every session of an account; returns how many there were. */
  async deleteAccountSessions(accountId: string): Promise<number> {
    const result = await this.db
      .deleteFrom('sessions')
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** Deletes sessions past their absolute end or idle longer than `idleMs`. */
  async purgeSessions(now: number, idleMs: number): Promise<number> {
    const result = await this.db
      .deleteFrom('sessions')
      .where((eb) => eb.or([eb('expires_at', '<=', now), eb('last_seen_at', '<=', now - idleMs)]))
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  // ── accounts ─────────────────────────────────────────────────────────────

  async findLogin(email: string): Promise<LoginRecord | undefined> {
    const row = await this.db
      .selectFrom('accounts')
      .select([...ACCOUNT_COLUMNS, 'password_hash'])
      .where('email', '=', email)
      .executeTakeFirst();
    return row && { account: toAccount(row), passwordHash: row.password_hash };
  }

  async passwordHashOf(accountId: string): Promise<string | null | undefined> {
    const row = await this.db
      .selectFrom('accounts')
      .select('password_hash')
      .where('id', '=', accountId)
      .executeTakeFirst();
    return row?.password_hash;
  }

  /**
   * Whether an invite could open an account for `email` now: unused, not withdrawn, not expired, and for
   * this email or for anyone — the conditions of the claim in `signUp`, which stays the authority (it
   * re-checks under the row's lock, so two sign-ups racing for one code still get one account). Asked
   * first, so that a bogus or spent code is refused before the email is looked at: otherwise anyone could
   * learn which emails have accounts with any made-up code.
   */
  async inviteUsable(codeHash: string, email: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('invites')
      .select('id')
      .where('code_hash', '=', codeHash)
      .where('used_at', 'is', null)
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', this.now())
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
    const now = this.now();
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
      return await this.db.transaction().execute(async (trx) => {
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

  /**
   * Sets a new password hash and ends every session of the account, in one transaction; `session`, when
   * given, is the one new session that survives (the browser that changed the password).
   */
  async changePassword(input: {
    accountId: string;
    passwordHash: string;
    session: NewSession | undefined;
  }): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
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
    return this.db.transaction().execute(async (trx) => {
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
    let query = this.db.selectFrom('accounts').select(ACCOUNT_COLUMNS);
    if (options.afterEmail !== undefined) query = query.where('email', '>', options.afterEmail);
    if (options.search) query = query.where('email', 'like', `%${escapeLike(options.search)}%`);
    // A search reads every account whose email sorts after the cursor until the page fills.
    const rows = await this.report(ADMIN_REPORTS, (check) =>
      check(query, 'accounts').orderBy('email', 'asc').limit(options.limit),
    );
    return rows.map(toAccount);
  }

  // ── keys ─────────────────────────────────────────────────────────────────

  /** Every key of an account (revoked ones too), oldest first, with what each has been charged. */
  async listKeysWithSpend(accountId: string): Promise<KeyWithSpend[]> {
    const keys = await this.db
      .selectFrom('api_keys')
      .select(['id', 'name', 'hint', 'created_at', 'last_used_at', 'revoked_at'])
      .where('account_id', '=', accountId)
      .orderBy('created_at', 'asc')
      .orderBy('id', 'asc')
      .execute();
    const spend = await this.report(accountId, (check) =>
      check(
        this.db
          .selectFrom('usage')
          .select((eb) => [
            'key_id',
            eb.fn.countAll<string | number>().as('requests'),
            eb.fn.sum<string | number | null>('input_cost_nano').as('input'),
            eb.fn.sum<string | number | null>('output_cost_nano').as('output'),
            eb.fn.sum<string | number | null>('shortfall_nano').as('shortfall'),
          ])
          .where('account_id', '=', accountId),
        'usage',
      ).groupBy('key_id'),
    );
    // The refusal counts are a few rows per minute of refusals: no time check needed.
    const refused = await this.report(accountId, () =>
      this.db
        .selectFrom('refusals')
        .select((eb) => ['key_id', eb.fn.sum<string | number | null>('requests').as('requests')])
        .where('account_id', '=', accountId)
        .groupBy('key_id'),
    );
    const byKey = new Map(spend.map((s) => [s.key_id, s]));
    const refusedOf = new Map(refused.map((r) => [r.key_id, sumOf(r.requests)]));
    return keys.map((k) => {
      const s = byKey.get(k.id);
      return {
        id: k.id,
        name: k.name,
        hint: k.hint,
        createdAt: toNumber(k.created_at),
        lastUsedAt: toNumberOrNull(k.last_used_at),
        revokedAt: toNumberOrNull(k.revoked_at),
        spendNano: s ? chargedOf(sumOf(s.input), sumOf(s.output), sumOf(s.shortfall)) : 0,
        requests: (s ? sumOf(s.requests) : 0) + (refusedOf.get(k.id) ?? 0),
        refused: refusedOf.get(k.id) ?? 0,
      };
    });
  }

  /** The stored hash of one key of an account (to drop it from the key cache after a revoke). */
  async keyHash(accountId: string, keyId: string): Promise<string | undefined> {
    const row = await this.db
      .selectFrom('api_keys')
      .select('key_hash')
      .where('id', '=', keyId)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return row?.key_hash;
  }

  // ── usage ────────────────────────────────────────────────────────────────

  /**
   * One page of an account's requests, newest first, after `cursor`: its usage rows, and its refusal
   * counts (a row per key, error code and minute; none under a provider filter or status ok, as refused
   * requests reached no provider). The two are read apart, each up to a page, and merged: newest first,
   * and at one time the usage rows before the counts. A cursor names the last row shown of either kind,
   * and each query goes on from it by its own order, compared by its own database (no string of one
   * database's collation is compared here).
   */
  async usagePage(
    accountId: string,
    filters: UsageFilters,
    options: { limit: number; cursor?: UsageCursor | undefined },
  ): Promise<UsageRow[]> {
    const cursor = options.cursor;
    const afterCount = cursor ? refusalOf(cursor.requestId) : undefined;
    const usage = await this.report(accountId, (check) => {
      let query = this.db
        .selectFrom('usage')
        .leftJoin('api_keys', 'api_keys.id', 'usage.key_id')
        .select([
          'usage.request_id as request_id',
          'usage.created_at as created_at',
          'usage.key_id as key_id',
          'api_keys.name as key_name',
          'api_keys.hint as key_hint',
          'usage.provider as provider',
          'usage.model as model',
          'usage.prompt_tokens as prompt_tokens',
          'usage.completion_tokens as completion_tokens',
          'usage.usage_estimated as usage_estimated',
          'usage.input_cost_nano as input_cost_nano',
          'usage.output_cost_nano as output_cost_nano',
          'usage.shortfall_nano as shortfall_nano',
          'usage.status as status',
          'usage.error_code as error_code',
          'usage.http_status as http_status',
          'usage.duration_ms as duration_ms',
          'usage.client_gone as client_gone',
        ])
        .where('usage.account_id', '=', accountId);
      if (filters.keyId !== undefined) query = query.where('usage.key_id', '=', filters.keyId);
      if (filters.provider !== undefined) query = query.where('usage.provider', '=', filters.provider);
      if (filters.status !== undefined) query = query.where('usage.status', '=', filters.status);
      if (filters.from !== undefined) query = query.where('usage.created_at', '>=', filters.from);
      if (filters.to !== undefined) query = query.where('usage.created_at', '<', filters.to);
      if (cursor && afterCount) {
        // After a count: every usage row of its time came before it.
        query = query.where('usage.created_at', '<', cursor.createdAt);
      } else if (cursor) {
        // The plain bound lets the index seek straight to the cursor; the OR breaks ties within one ms.
        query = query
          .where('usage.created_at', '<=', cursor.createdAt)
          .where((eb) =>
            eb.or([
              eb('usage.created_at', '<', cursor.createdAt),
              eb('usage.request_id', '<', cursor.requestId),
            ]),
          );
      }
      // A filter no index serves (status) reads the account's rows until the page fills.
      return check(query, 'usage')
        .orderBy('usage.created_at', 'desc')
        .orderBy('usage.request_id', 'desc')
        .limit(options.limit);
    });
    const rows: UsageRow[] = usage.map((r) => ({
      requestId: r.request_id,
      createdAt: toNumber(r.created_at),
      keyId: r.key_id,
      keyName: r.key_name,
      keyHint: r.key_hint,
      provider: r.provider,
      model: r.model,
      promptTokens: toNumber(r.prompt_tokens),
      completionTokens: toNumber(r.completion_tokens),
      usageEstimated: r.usage_estimated === 1,
      costNano: chargedOf(
        toNumber(r.input_cost_nano),
        toNumber(r.output_cost_nano),
        toNumber(r.shortfall_nano),
      ),
      status: r.status === 'ok' ? 'ok' : 'error',
      errorCode: r.error_code,
      httpStatus: r.http_status,
      durationMs: toNumber(r.duration_ms),
      clientGone: r.client_gone === 1,
      requests: 1,
    }));
    if (filters.provider !== undefined || filters.status === 'ok') return rows;

    // The counts are a few rows per minute of refusals, read through their primary key: no time check.
    const counts = await this.report(accountId, () => {
      let query = this.db
        .selectFrom('refusals')
        .leftJoin('api_keys', 'api_keys.id', 'refusals.key_id')
        .select([
          'refusals.minute_start as minute_start',
          'refusals.key_id as key_id',
          'api_keys.name as key_name',
          'api_keys.hint as key_hint',
          'refusals.error_code as error_code',
          'refusals.http_status as http_status',
          'refusals.requests as requests',
        ])
        .where('refusals.account_id', '=', accountId);
      if (filters.keyId !== undefined) query = query.where('refusals.key_id', '=', filters.keyId);
      if (filters.from !== undefined) query = query.where('refusals.minute_start', '>=', filters.from);
      if (filters.to !== undefined) query = query.where('refusals.minute_start', '<', filters.to);
      if (cursor && afterCount) {
        const { keyId, errorCode } = afterCount;
        query = query
          .where('refusals.minute_start', '<=', cursor.createdAt)
          .where((eb) =>
            eb.or([
              eb('refusals.minute_start', '<', cursor.createdAt),
              eb('refusals.key_id', '<', keyId),
              eb.and([eb('refusals.key_id', '=', keyId), eb('refusals.error_code', '<', errorCode)]),
            ]),
          );
      } else if (cursor) {
        // After a usage row: the counts of its time come after it.
        query = query.where('refusals.minute_start', '<=', cursor.createdAt);
      }
      return query
        .orderBy('refusals.minute_start', 'desc')
        .orderBy('refusals.key_id', 'desc')
        .orderBy('refusals.error_code', 'desc')
        .limit(options.limit);
    });
    if (counts.length === 0) return rows;
    const refused: UsageRow[] = counts.map((c) => {
      const minuteStart = toNumber(c.minute_start);
      return {
        requestId: `${REFUSAL_ID_PREFIX}${minuteStart}-${c.key_id}-${c.error_code}`,
        createdAt: minuteStart,
        keyId: c.key_id,
        keyName: c.key_name,
        keyHint: c.key_hint,
        provider: null,
        model: null,
        promptTokens: 0,
        completionTokens: 0,
        usageEstimated: false,
        costNano: 0,
        status: 'error',
        errorCode: c.error_code,
        httpStatus: c.http_status,
        durationMs: 0,
        clientGone: false,
        requests: toNumber(c.requests),
      };
    });
    return newestFirst(rows, refused, options.limit);
  }

  /**
   * Requests, tokens and charges of an account per UTC day and provider in [from, to). The day is
   * computed in the database as an integer division of the epoch-ms column (the divisor is a literal,
   * so SQLite and PostgreSQL both divide integers and group by the same expression). Refused requests are
   * not in it (`refusalsDaily`).
   */
  async usageDaily(
    accountId: string,
    range: { from: number; to: number },
    keyId?: string,
  ): Promise<DailyUsageRow[]> {
    const day = (eb: ExpressionBuilder<Database, 'usage'>) => eb('created_at', '/', eb.lit(DAY_MS));
    const rows = await this.report(accountId, (check) => {
      let query = this.db
        .selectFrom('usage')
        .select((eb) => [
          day(eb).as('day'),
          'provider',
          eb.fn.countAll<string | number>().as('requests'),
          eb.fn.sum<string | number | null>('prompt_tokens').as('prompt_tokens'),
          eb.fn.sum<string | number | null>('completion_tokens').as('completion_tokens'),
          eb.fn.sum<string | number | null>('input_cost_nano').as('input'),
          eb.fn.sum<string | number | null>('output_cost_nano').as('output'),
          eb.fn.sum<string | number | null>('shortfall_nano').as('shortfall'),
        ])
        .where('account_id', '=', accountId)
        .where('created_at', '>=', range.from)
        .where('created_at', '<', range.to);
      if (keyId !== undefined) query = query.where('key_id', '=', keyId);
      return check(query, 'usage').groupBy((eb) => [day(eb), 'provider']);
    });
    return rows
      .map((r) => ({
        day: Math.floor(Number(r.day)),
        provider: r.provider,
        requests: sumOf(r.requests),
        promptTokens: sumOf(r.prompt_tokens),
        completionTokens: sumOf(r.completion_tokens),
        costNano: chargedOf(sumOf(r.input), sumOf(r.output), sumOf(r.shortfall)),
      }))
      .sort((a, b) => a.day - b.day || String(a.provider).localeCompare(String(b.provider)));
  }

  /** Requests of an account refused before any hold (402), per UTC day in [from, to). */
  async refusalsDaily(
    accountId: string,
    range: { from: number; to: number },
    keyId?: string,
  ): Promise<DailyRefusals[]> {
    const day = (eb: ExpressionBuilder<Database, 'refusals'>) => eb('minute_start', '/', eb.lit(DAY_MS));
    const rows = await this.report(accountId, () => {
      let query = this.db
        .selectFrom('refusals')
        .select((eb) => [day(eb).as('day'), eb.fn.sum<string | number | null>('requests').as('requests')])
        .where('account_id', '=', accountId)
        .where('minute_start', '>=', range.from)
        .where('minute_start', '<', range.to);
      if (keyId !== undefined) query = query.where('key_id', '=', keyId);
      return query.groupBy((eb) => day(eb));
    });
    return rows
      .map((r) => ({ day: Math.floor(Number(r.day)), requests: sumOf(r.requests) }))
      .sort((a, b) => a.day - b.day);
  }

  /**
   * Requests and failed requests per provider since a time, over every account. Refused requests reached
   * no provider and are not among them.
   */
  async providerTraffic(since: number): Promise<ProviderTraffic[]> {
    const rows = await this.report(ADMIN_REPORTS, (check) =>
      check(
        this.db
          .selectFrom('usage')
          .select((eb) => ['provider', 'status', eb.fn.countAll<string | number>().as('n')])
          .where('created_at', '>=', since)
          .where('provider', 'is not', null),
        'usage',
      ).groupBy(['provider', 'status']),
    );
    const out = new Map<string, ProviderTraffic>();
    for (const r of rows) {
      if (r.provider === null) continue;
      const entry = out.get(r.provider) ?? { provider: r.provider, requests: 0, errors: 0 };
      entry.requests += sumOf(r.n);
      if (r.status !== 'ok') entry.errors += sumOf(r.n);
      out.set(r.provider, entry);
    }
    return [...out.values()];
  }

  /** The latest credits granted to an account (ledger rows of kind credit), newest first. */
  async recentCredits(accountId: string, limit: number): Promise<CreditEntry[]> {
    const rows = await this.db
      .selectFrom('ledger')
      .select(['id', 'amount_nano', 'note', 'created_at'])
      .where('account_id', '=', accountId)
      .where('kind', '=', 'credit')
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit)
      .execute();
    return rows.map((r) => ({
      id: r.id,
      amountNano: toNumber(r.amount_nano),
      note: r.note,
      createdAt: toNumber(r.created_at),
    }));
  }

  // ── invites ──────────────────────────────────────────────────────────────

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
      created_at: this.now(),
      expires_at: input.expiresAt,
      used_at: null,
      used_by: null,
      revoked_at: null,
    };
    await this.db.insertInto('invites').values(row).execute();
    return toInvite(row);
  }

  /** The latest invites, newest first. */
  async listInvites(limit: number): Promise<InviteRecord[]> {
    const rows = await this.db
      .selectFrom('invites')
      .select(INVITE_COLUMNS)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit)
      .execute();
    return rows.map(toInvite);
  }

  async getInvite(id: string): Promise<InviteRecord | undefined> {
    const row = await this.db
      .selectFrom('invites')
      .select(INVITE_COLUMNS)
      .where('id', '=', id)
      .executeTakeFirst();
    return row && toInvite(row);
  }

  /** Withdraws an unused invite. */
  async revokeInvite(id: string): Promise<'revoked' | 'not_found' | 'already_closed'> {
    return this.db.transaction().execute(async (trx) => {
      const row = await trx
        .selectFrom('invites')
        .select(['used_at', 'revoked_at'])
        .where('id', '=', id)
        .executeTakeFirst();
      if (!row) return 'not_found';
      if (row.used_at !== null || row.revoked_at !== null) return 'already_closed';
      await trx.updateTable('invites').set({ revoked_at: this.now() }).where('id', '=', id).execute();
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

/**
 * A search term as a LIKE pattern without an ESCAPE clause (whose default differs between SQLite and
 * PostgreSQL): `%` and `\` are dropped; `_` (common in emails) stays, matching any one character, which
 * only widens a search.
 */
function escapeLike(term: string): string {
  return term.replace(/[%\\]/g, '');
}

/** The `requestId` of a refusal count's row: `refused-<minute start>-<key id>-<error code>`. */
const REFUSAL_ID_PREFIX = 'refused-';

/** The key and code a refusal count's `requestId` names; undefined for a request's id. */
function refusalOf(requestId: string): { keyId: string; errorCode: string } | undefined {
  const m = /^refused-\d+-([A-Za-z0-9_]+)-([A-Za-z0-9_]+)$/.exec(requestId);
  return m ? { keyId: m[1] as string, errorCode: m[2] as string } : undefined;
}

/**
 * Two pages in the usage list's order merged into one of at most `limit` rows: newest first, and at one
 * time the usage rows before the refusal counts. Within each kind the order is the one its query had.
 */
function newestFirst(usage: UsageRow[], counts: UsageRow[], limit: number): UsageRow[] {
  const out: UsageRow[] = [];
  let u = 0;
  let c = 0;
  while (out.length < limit && (u < usage.length || c < counts.length)) {
    const a = usage[u];
    const b = counts[c];
    if (a && (!b || a.createdAt >= b.createdAt)) {
      out.push(a);
      u++;
    } else if (b) {
      out.push(b);
      c++;
    }
  }
  return out;
}
