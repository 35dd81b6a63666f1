/**
 * The store's contract. `src/store/` is the only place with SQL; everything else talks to these
 * interfaces. Money is integer nanodollars. Times are Unix epoch milliseconds.
 *
 * The store is built per database (`sqlite/`, `postgres/`) from narrow parts — the ledger, its reads,
 * accounts, API keys, idempotency records, instances — each an interface below; `Store` is all of them
 * together, as `compose-store.ts` puts them.
 */

import type { DatabaseKind } from '../config/index.js';
import type { DashboardStore } from './dashboard-types.js';
import type { Account, AccountRole, AccountStatus, UsageStatus } from './records.js';
import type { TopUpCodes } from './topup-code-types.js';

export type { Account, AccountRole, AccountStatus, UsageStatus } from './records.js';
export type {
  CodeBatch,
  NewCodeBatch,
  RedeemCodeResult,
  TopUpCodeState,
  TopUpCodes,
} from './topup-code-types.js';

/** When a key's spend limit starts a new window (src/store/key-window-rules.ts). */
export type LimitReset = 'daily' | 'weekly' | 'monthly' | 'never';

/** A key's own controls (docs/api.md "Key controls"); null: none. */
export interface KeyControls {
  /** The spend limit per window. */
  limitNano: number | null;
  limitReset: LimitReset;
  /** When the key stops working (epoch ms). */
  expiresAt: number | null;
  /** The provider and model names the key may use; null: every one. */
  allowed: string[] | null;
  /** The key's own requests and tokens per minute, beside KEY_RATE_LIMIT_RPM. */
  rpm: number | null;
  tpm: number | null;
}

/** The figures of the window a key's row counts (meaningful while it has a limit). */
export interface KeyWindowFigures {
  windowStart: number;
  spentNano: number;
  heldNano: number;
}

/** What may be changed of a key after its creation; a field left out is left as it is. */
export interface KeyChanges {
  name?: string;
  limitNano?: number | null;
  limitReset?: LimitReset;
  expiresAt?: number | null;
  allowed?: string[] | null;
  rpm?: number | null;
  tpm?: number | null;
}

export interface ApiKeyInfo {
  id: string;
  accountId: string;
  name: string;
  /** Display hint, e.g. `sk-svc-1a2b…9f0e`. */
  hint: string;
  createdAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
  controls: KeyControls;
  window: KeyWindowFigures;
}

/** What authentication needs from a key lookup by hash. */
export interface KeyAuthRecord {
  keyId: string;
  keyName: string;
  accountId: string;
  accountStatus: AccountStatus;
  revoked: boolean;
  /** The key's controls; undefined: none. */
  controls?: KeyControls;
}

/**
 * One row per request that reached billing and held money (served, or failed upstream after its hold).
 * Requests refused before any hold are counted in `refusals` instead (`RefusalRecord`).
 */
export interface UsageRecord {
  /** The completion id (`chatcmpl-…`); unique: a request is settled at most once. */
  requestId: string;
  accountId: string;
  keyId: string;
  /** Provider that served (or last tried); null when none was tried. */
  provider: string | null;
  model: string | null;
  /** The whole prompt, its cached parts included. */
  promptTokens: number;
  /** The part of `promptTokens` read from the upstream's cache (billed at its cache-read price); 0 if unset. */
  cacheReadTokens?: number;
  /** The part of `promptTokens` written to the upstream's cache (at its cache-write price); 0 if unset. */
  cacheWriteTokens?: number;
  completionTokens: number;
  /** True when usage was counted locally because the upstream reported none. */
  usageEstimated: boolean;
  inputCostNano: number;
  outputCostNano: number;
  status: UsageStatus;
  /** The error code for a failed request. */
  errorCode: string | null;
  httpStatus: number;
  durationMs: number;
  /** True when the client disconnected before the response was sent. */
  clientGone: boolean;
  createdAt: number;
}

/**
 * A request refused before any money was held (402 `insufficient_balance`). Refusals cost nothing and a
 * flood of them must not grow the database by a row each: they are counted per account, key, minute and
 * error code (table `refusals`, migration 0010), so a flood writes O(1) rows per minute per key and code.
 */
export interface RefusalRecord {
  accountId: string;
  keyId: string;
  /** The error code the request was refused with. */
  errorCode: string;
  httpStatus: number;
  /** When the request started, epoch ms (its minute is the count it adds to). */
  at: number;
}

export interface PlaceHoldInput {
  holdId: string;
  accountId: string;
  requestId: string;
  amountNano: number;
  /** The serving process's instance id. */
  owner: string;
  createdAt: number;
  expiresAt: number;
  /**
   * The calling key: when it has a spend limit, the hold counts against the limit's window in the same
   * atomic step as against the balance (src/store/key-window-rules.ts).
   */
  keyId?: string;
}

/** Why a key's limit refused a hold: the limit, what is left of it, when its window resets (null: never). */
export interface KeyLimitRefusal {
  limitNano: number;
  remainingNano: number;
  resetsAt: number | null;
}

export type PlaceHoldResult =
  /** `keyWindow`: the window of the key's limit the hold counts in; null when the key has no limit. */
  | { ok: true; keyWindow?: number | null }
  /** Balance too low (or the account is disabled / missing): nothing was changed. */
  | {
      ok: false;
      reason: 'insufficient_balance' | 'account_inactive';
      balanceNano: number;
      /** When the key has a limit: what it would have allowed. */
      key?: KeyLimitRefusal;
    }
  /** The key's limit cannot cover the hold: nothing was changed. */
  | { ok: false; reason: 'key_limit_exceeded'; balanceNano: number; key: KeyLimitRefusal };

export interface SettleInput {
  holdId: string;
  accountId: string;
  /** The amount the hold was placed with (`Hold.amountNano`); see {@link ReleaseInput.holdAmountNano}. */
  holdAmountNano: number;
  /** Actual cost to charge (input + output cost of the usage row). */
  costNano: number;
  usage: UsageRecord;
  /** The hold's key and the window of its limit the hold counts in (`PlaceHoldResult.keyWindow`). */
  keyId?: string;
  keyWindow?: number | null;
  /**
   * When the request carries an idempotency key: its stored answer is written in the same transaction
   * as the charge, so a charged request can always be replayed and never charged twice.
   */
  idempotency?: { key: string; render: (settled: SettleResult) => string };
}

export interface BeginIdempotentInput {
  accountId: string;
  key: string;
  bodyHash: string;
  requestId: string;
  now: number;
  /** An unfinished attempt older than this may be taken over by a retry. */
  lockedUntil: number;
  expiresAt: number;
}

export type BeginIdempotentResult =
  /** This request owns the key now and should be served. */
  | { kind: 'started' }
  /** A request with this key and body was already answered: here is that answer. */
  | { kind: 'replay'; responseJson: string }
  /** A request with this key is being served right now. */
  | { kind: 'in_progress' }
  /** The key was used with a different body. */
  | { kind: 'mismatch' };

export interface SettleResult {
  /** Available balance after the settle. */
  balanceNano: number;
  /** What was actually charged (≤ costNano; less only when hold + balance could not cover it). */
  chargedNano: number;
  /** costNano − chargedNano: recorded on the usage row. */
  shortfallNano: number;
}

export interface ReleaseInput {
  holdId: string;
  accountId: string;
  /**
   * The amount the hold was placed with (`Hold.amountNano`). The embedded SQLite store closes the hold by
   * deleting the row of this id, account and amount in one statement instead of reading the amount first;
   * no row deleted means the hold was already closed (or is not this one): nothing is returned.
   */
  holdAmountNano: number;
  /** The failed request's usage row (zero cost), or null to write none. */
  usage: UsageRecord | null;
  /** As in {@link SettleInput}. */
  keyId?: string;
  keyWindow?: number | null;
}

export interface LedgerProblem {
  accountId: string;
  email: string;
  creditsNano: number;
  chargesNano: number;
  openHoldsNano: number;
  balanceNano: number;
  /** credits − (balance + open holds + charges); 0 when consistent. */
  discrepancyNano: number;
  /**
   * `spend_counters`: the money is right, but the spend today and this month kept on the account's row
   * (what `GET /api/v1/key` reports) differs from the charges of its requests started today and this month.
   */
  reason:
    | 'mismatch'
    | 'negative_balance'
    | 'duplicate_charge'
    | 'spend_counters'
    | 'shortfall'
    | 'key_over_limit';
  /** With `key_over_limit`: the key whose window spend is above its limit. */
  key?: { keyId: string; limitNano: number; spentNano: number };
  /** With `spend_counters`: the sums from the rows, and what the counters say. */
  spend?: { todayNano: number; monthNano: number; countedTodayNano: number; countedMonthNano: number };
  /** With `shortfall`: the account's unbilled service (see `LedgerShortfall`). */
  shortfall?: { requests: number; shortfallNano: number };
}

/**
 * Service an account received but was not charged for: requests whose actual cost exceeded their hold
 * while the balance could not pay the rest, and those settled after their hold was released (the usage
 * rows' `shortfall_nano`). The money is consistent — nothing was taken that is not recorded — but the
 * operator was not paid for it.
 */
export interface LedgerShortfall {
  accountId: string;
  email: string;
  /** Requests with a shortfall. */
  requests: number;
  /** The sum of their shortfalls. */
  shortfallNano: number;
}

export interface LedgerCheckOptions {
  /**
   * The unbilled service an account may have before the check fails (`LEDGER_SHORTFALL_ALLOWANCE_USD`);
   * 0 (the default): any shortfall fails it.
   */
  shortfallAllowanceNano?: number;
}

export interface LedgerReport {
  ok: boolean;
  accounts: number;
  problems: LedgerProblem[];
  /** Every account with a shortfall, within the allowance or not, largest first. */
  shortfalls: LedgerShortfall[];
  /** The allowance per account the check was run with. */
  shortfallAllowanceNano: number;
}

/** Which open holds `releaseHolds` releases. */
export type HoldsToRelease =
  | { kind: 'all' }
  /**
   * Holds past their expiry, except those in `keep` (the calls this process is still serving) and, when
   * `self` and `ownersAliveSince` are given, those of other instances seen alive since then (each of them
   * sweeps its own).
   */
  | { kind: 'expired'; now: number; keep?: readonly string[]; self?: string; ownersAliveSince?: number }
  | { kind: 'not_owned_by'; owner: string }
  | { kind: 'owned_by'; owner: string }
  /**
   * Holds of instances that registered (`markInstanceAlive`) and have been silent since before
   * `staleBefore`, placed before that time too: a hold placed since then is its owner's proof of life,
   * even if its heartbeat is late. Holds of an owner with no record (a process of a version before the
   * records) are left to their expiry.
   */
  | { kind: 'of_stale_instances'; staleBefore: number };

/**
 * Money: the only ways a balance changes, and the records of the calls that moved it. Built per database:
 * `sqlite/ledger.ts` and `postgres/ledger.ts`, both held to the rules of `ledger-rules.ts`.
 */
export interface Ledger {
  /** Appends a credit to the ledger and adds it to the balance, in one transaction. */
  addCredit(input: {
    accountId: string;
    amountNano: number;
    note: string | null;
  }): Promise<{ balanceNano: number }>;
  /** Atomically moves `amountNano` from the balance into an open hold, or changes nothing. */
  placeHold(input: PlaceHoldInput): Promise<PlaceHoldResult>;
  /**
   * One transaction: closes the hold, charges the actual cost (from the hold, and beyond it from the
   * balance as far as it goes, never below zero), returns the rest, appends the charge to the ledger
   * and writes the usage row. A hold already released (expired) is treated as a hold of 0.
   */
  settle(input: SettleInput): Promise<SettleResult>;
  /** One transaction: closes the hold, returns all of it, writes the (failed) usage row. */
  release(input: ReleaseInput): Promise<{ balanceNano: number }>;
  /** Releases the open holds `filter` picks (see `HoldsToRelease`). Returns how many. */
  releaseHolds(filter: HoldsToRelease): Promise<number>;
  /** Writes a usage row without moving money (imports, tests; the gateway writes its rows by settle and release). */
  recordUsage(usage: UsageRecord): Promise<void>;
  /**
   * Counts a request refused before any hold (402): adds one to its account's, key's, minute's and code's
   * count, so a flood of refusals costs O(1) rows per minute per key and code (see `RefusalRecord`).
   */
  recordRefusal(refusal: RefusalRecord): Promise<void>;
}

/** What the ledger holds, read back: open holds, the audit, the charges and the usage rows. */
export interface LedgerReads {
  /** Sum of open holds of an account. */
  openHoldsNano(accountId: string): Promise<number>;
  /** How many holds are open across all accounts, and their sum (one indexed query; for metrics). */
  openHoldsTotal(): Promise<{ count: number; amountNano: number }>;
  /**
   * Recomputes every account from the ledger: credits = balance + open holds + charges, balance ≥ 0; and
   * reports each account's unbilled service (shortfalls), failing for one beyond the allowance.
   */
  ledgerCheck(options?: LedgerCheckOptions): Promise<LedgerReport>;
  /**
   * Sum of the charges of an account's requests started at or after each of the given times (one figure
   * per time), from its usage rows: exact for any time, and as slow as the rows are many (audits, tests).
   */
  chargesSince(accountId: string, since: readonly number[]): Promise<number[]>;
  /** Usage rows of an account, newest first. */
  listUsage(accountId: string, options: { limit: number; before?: number }): Promise<UsageRecord[]>;
}

export interface Accounts {
  createAccount(input: {
    email: string;
    role: AccountRole;
    passwordHash: string | null;
  }): Promise<{ ok: true; account: Account } | { ok: false; reason: 'email_taken' }>;
  getAccount(id: string): Promise<Account | undefined>;
  findAccountByEmail(email: string): Promise<Account | undefined>;
  /**
   * The charges of an account's requests started today and this month (UTC) at `now`, from the counters
   * every settle keeps on its row (src/store/spend.ts): one row read however many requests it made.
   */
  spendOf(accountId: string, now: number): Promise<{ todayNano: number; monthNano: number }>;
}

export interface ApiKeys {
  /** Creates a key unless the account already has `maxActive` unrevoked keys (checked atomically). */
  createApiKey(input: {
    accountId: string;
    name: string;
    keyHash: string;
    hint: string;
    maxActive: number;
    /** Its controls, as `updateApiKey` takes them. */
    controls?: KeyChanges;
  }): Promise<{ ok: true; key: ApiKeyInfo } | { ok: false; reason: 'limit_reached' }>;
  /**
   * Changes a key's name and controls; undefined when the account has no such key. Setting a limit or its
   * reset starts counting the window of `now` from the charges of the key's requests started in it and the
   * key's open holds counted in it.
   */
  updateApiKey(accountId: string, keyId: string, changes: KeyChanges): Promise<ApiKeyInfo | undefined>;
  listApiKeys(accountId: string): Promise<ApiKeyInfo[]>;
  revokeApiKey(accountId: string, keyId: string): Promise<'revoked' | 'not_found' | 'already_revoked'>;
  /** One API key of an account, revoked or not. */
  getApiKey(accountId: string, keyId: string): Promise<ApiKeyInfo | undefined>;
  touchApiKey(keyId: string, at: number): Promise<void>;
}

/** The lookup every authenticated call makes (SQLite runs it as a prepared statement of its own). */
export interface KeyLookup {
  findKeyByHash(keyHash: string): Promise<KeyAuthRecord | undefined>;
}

export interface IdempotencyRecords {
  /** Claims an idempotency key for a request (see `BeginIdempotentResult`). */
  beginIdempotent(input: BeginIdempotentInput): Promise<BeginIdempotentResult>;
  /** Gives up a claimed key whose request failed without a charge, so a retry may run. */
  abandonIdempotent(accountId: string, key: string, requestId: string): Promise<void>;
  /** Deletes idempotency records past their expiry. Returns how many. */
  purgeIdempotency(now: number): Promise<number>;
}

/** The serving processes of a database shared by several (PostgreSQL; docs/operations.md "Crash safety"). */
export interface Instances {
  /** Records that the serving instance `owner` is alive at `now` (its first call registers it). */
  markInstanceAlive(owner: string, now: number): Promise<void>;
  /** Forgets an instance that stopped: its own record, at its graceful stop. */
  forgetInstance(owner: string): Promise<void>;
  /**
   * Forgets instances silent since before `staleBefore` that own no open hold (after their holds were
   * released). Returns how many.
   */
  forgetStaleInstances(staleBefore: number): Promise<number>;
}

/** The store of one database, as opened by `openStore`. */
export interface StoreLifecycle {
  /** The database's name, for display (`tollgate migrate` prints it); behaviour reads the properties below. */
  readonly dialect: DatabaseKind;
  /**
   * Whether several server processes may use this database at once: true for PostgreSQL, whose instances
   * track one another (`Instances`); false for the embedded SQLite store, one server per file
   * (`sqlite/server-lock.ts`).
   */
  readonly sharedByInstances: boolean;
  /** Applies pending migrations, or those up to and including `target` (a migration's name); idempotent. */
  migrate(target?: string): Promise<void>;
  /** Writes what is still queued, then closes the database. */
  close(): Promise<void>;
  /** Cheap liveness query for /readyz. */
  ping(): Promise<void>;
  /**
   * The dashboard's repository over the same database (sessions, invites, reports), with its clock (the
   * store's unless given).
   */
  dashboard(now?: () => number): DashboardStore;
}

/** Everything the store offers, composed from the parts above by `compose-store.ts`. */
export interface Store
  extends StoreLifecycle,
    Ledger,
    LedgerReads,
    Accounts,
    ApiKeys,
    KeyLookup,
    IdempotencyRecords,
    Instances,
    TopUpCodes {}
