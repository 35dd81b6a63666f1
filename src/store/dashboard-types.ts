/**
 * The dashboard's contract: the records its pages read and the parts of its repository — sessions,
 * invites and sign-up, account administration, keys, usage reports — each an interface below;
 * `DashboardStore` is all of them together, as `shared/compose-dashboard.ts` puts them. Like `types.ts`,
 * this file declares and imports no implementation. Money is integer nanodollars; times are Unix epoch
 * milliseconds.
 */

import type { CompiledQuery, RawBuilder, SqlBool } from 'kysely';
import type { Account, AccountStatus, UsageStatus } from './records.js';

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
  /** The whole prompt, its cached parts included. */
  promptTokens: number;
  /** The part of `promptTokens` read from the upstream's cache. */
  cacheReadTokens: number;
  /** The part of `promptTokens` written to the upstream's cache. */
  cacheWriteTokens: number;
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
  /** The top-up code batch the credit was redeemed from; null for a grant. */
  batchId: string | null;
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

export type SignUpResult =
  | { ok: true; account: Account }
  | { ok: false; reason: 'email_taken' | 'invalid_invite' };

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

/** Dashboard sessions: the cookie's record and the account it belongs to. */
export interface Sessions {
  createSession(session: NewSession): Promise<void>;
  findSession(id: string): Promise<SessionRecord | undefined>;
  touchSession(id: string, at: number): Promise<void>;
  deleteSession(id: string): Promise<void>;
  /** Ends every session of an account; returns how many there were. */
  deleteAccountSessions(accountId: string): Promise<number>;
  /** Deletes sessions past their absolute end or idle longer than `idleMs`. */
  purgeSessions(now: number, idleMs: number): Promise<number>;
}

/** Invites, and the sign-up that claims one. */
export interface Invites {
  /** Whether an invite could open an account for `email` now (`signUp` stays the authority). */
  inviteUsable(codeHash: string, email: string): Promise<boolean>;
  /** Creates a user account, claiming the invite (when one is given) in the same transaction. */
  signUp(input: {
    email: string;
    passwordHash: string;
    inviteCodeHash: string | null;
  }): Promise<SignUpResult>;
  createInvite(input: {
    codeHash: string;
    createdBy: string;
    email: string | null;
    note: string | null;
    expiresAt: number;
  }): Promise<InviteRecord>;
  /** The latest invites, newest first. */
  listInvites(limit: number): Promise<InviteRecord[]>;
  getInvite(id: string): Promise<InviteRecord | undefined>;
  /** Withdraws an unused invite. */
  revokeInvite(id: string): Promise<'revoked' | 'not_found' | 'already_closed'>;
}

/** Logins, passwords and the administration of accounts. */
export interface AccountAdmin {
  findLogin(email: string): Promise<LoginRecord | undefined>;
  passwordHashOf(accountId: string): Promise<string | null | undefined>;
  /** Sets a new password hash and ends every session of the account but `session`, in one transaction. */
  changePassword(input: {
    accountId: string;
    passwordHash: string;
    session: NewSession | undefined;
  }): Promise<void>;
  /** Enables or disables an account; disabling also ends its sessions (one transaction). */
  setAccountStatus(accountId: string, status: AccountStatus): Promise<Account | undefined>;
  /** Accounts in email order, after `afterEmail`, optionally those whose email contains `search`. */
  listAccounts(options: { limit: number; afterEmail?: string; search?: string }): Promise<Account[]>;
}

/** An account's keys as the dashboard shows them. */
export interface KeyReports {
  /** Every key of an account (revoked ones too), oldest first, with what each has been charged. */
  listKeysWithSpend(accountId: string): Promise<KeyWithSpend[]>;
  /** The stored hash of one key of an account (to drop it from the key cache after a revoke). */
  keyHash(accountId: string, keyId: string): Promise<string | undefined>;
}

/** The read models of the usage pages. */
export interface UsageReports {
  /** One page of an account's requests, newest first, after `cursor`: usage rows and refusal counts. */
  usagePage(
    accountId: string,
    filters: UsageFilters,
    options: { limit: number; cursor?: UsageCursor | undefined },
  ): Promise<UsageRow[]>;
  /** Requests, tokens and charges of an account per UTC day and provider in [from, to). */
  usageDaily(
    accountId: string,
    range: { from: number; to: number },
    keyId?: string,
  ): Promise<DailyUsageRow[]>;
  /** Requests of an account refused before any hold (402), per UTC day in [from, to). */
  refusalsDaily(
    accountId: string,
    range: { from: number; to: number },
    keyId?: string,
  ): Promise<DailyRefusals[]>;
  /** Requests and failed requests per provider since a time, over every account. */
  providerTraffic(since: number): Promise<ProviderTraffic[]>;
  /** The latest credits granted to an account (ledger rows of kind credit), newest first. */
  recentCredits(accountId: string, limit: number): Promise<CreditEntry[]>;
}

/** What the audit log records (`AuditLog.recordAudit`). */
export interface NewAuditEntry {
  /** The admin's account; null when the CLI acted. */
  actorId: string | null;
  /** The admin's email, or `cli`. */
  actor: string;
  /** What was done: `credit.grant`, `account.disable`, `invite.create`, `code_batch.create`, `key.update`… */
  action: string;
  accountId?: string | null;
  /** The invite, batch or key acted on. */
  targetId?: string | null;
  /** The action's figures (amounts as nanodollars, names, changed fields). */
  detail?: Record<string, unknown>;
  /** Epoch ms; the store's clock when unset. */
  at?: number;
}

export interface AuditEntry {
  id: string;
  at: number;
  actorId: string | null;
  actor: string;
  action: string;
  accountId: string | null;
  targetId: string | null;
  detail: Record<string, unknown> | null;
}

/** The administrators' actions, kept in the database (migration 0014). */
export interface AuditLog {
  recordAudit(entry: NewAuditEntry): Promise<AuditEntry>;
  /** Newest first; `before`: the time and id of the last entry of the previous page. */
  listAudit(options: {
    limit: number;
    before?: { at: number; id: string } | undefined;
  }): Promise<AuditEntry[]>;
}

/** Totals for the usage and administration pages' breakdowns (`shared/usage-totals.ts`). */
export interface UsageTotals {
  /** Requests, tokens and charges by time bucket, account, key, provider, model and status. */
  usageTotals(query: UsageTotalsQuery): Promise<UsageTotalsRow[]>;
  /** Requests refused before any hold, by time bucket, account, key and reason. */
  refusalTotals(query: UsageTotalsQuery): Promise<RefusalTotalsRow[]>;
}

/** The scope of a totals report: one account's rows (or every account's), a time range, optional filters. */
export interface UsageTotalsQuery {
  /** Undefined: every account (the administration pages). */
  accountId?: string | undefined;
  /** Epoch ms, [from, to). */
  from: number;
  to: number;
  /** The width of a time bucket in ms (an hour, or a quarter of one for zones offset by parts of hours). */
  bucketMs: number;
  keyId?: string | undefined;
  provider?: string | undefined;
  model?: string | undefined;
}

export interface UsageTotalsRow {
  /** The bucket's start, epoch ms. */
  bucket: number;
  accountId: string;
  keyId: string;
  provider: string | null;
  model: string | null;
  status: 'ok' | 'error';
  requests: number;
  promptTokens: number;
  completionTokens: number;
  costNano: number;
}

export interface RefusalTotalsRow {
  bucket: number;
  accountId: string;
  keyId: string;
  /** The error code the requests were refused with. */
  reason: string;
  requests: number;
}

/**
 * The dashboard's repository: sessions, invites, sign-up, account administration and the read models
 * of the usage pages, over the query builder of the store it belongs to (`Store.dashboard`).
 */
export interface DashboardStore
  extends Sessions,
    Invites,
    AccountAdmin,
    KeyReports,
    UsageReports,
    UsageTotals,
    AuditLog {}
