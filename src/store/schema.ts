import type { Generated } from 'kysely';

/**
 * Row types of the database, as Kysely sees them. Money columns are integer nanodollars (BIGINT);
 * times are Unix epoch milliseconds (BIGINT); booleans are 0/1 integers, so the same schema works on
 * SQLite and PostgreSQL.
 */

/** PostgreSQL returns BIGINT as a string; SQLite as a number. Both are read through `toNumber`. */
export type BigIntColumn = number | string | bigint;

export interface AccountsTable {
  id: string;
  email: string;
  role: string;
  status: string;
  password_hash: string | null;
  balance_nano: BigIntColumn;
  created_at: BigIntColumn;
  /** Today's and this month's charges (migration 0008, src/store/spend.ts); 0 on a new account. */
  spend_day: Generated<BigIntColumn>;
  spend_day_nano: Generated<BigIntColumn>;
  spend_month: Generated<BigIntColumn>;
  spend_month_nano: Generated<BigIntColumn>;
}

/** An account row as inserted (the spend counters start at their defaults). */
export type NewAccountRow = Omit<
  AccountsTable,
  'spend_day' | 'spend_day_nano' | 'spend_month' | 'spend_month_nano'
>;

export interface ApiKeysTable {
  id: string;
  account_id: string;
  name: string;
  key_hash: string;
  hint: string;
  created_at: BigIntColumn;
  last_used_at: BigIntColumn | null;
  revoked_at: BigIntColumn | null;
  // Key controls (migration 0012; src/store/key-window-rules.ts).
  /** The spend limit per window; null: none. */
  limit_nano?: BigIntColumn | null;
  /** daily | weekly | monthly | never. */
  limit_reset?: string;
  window_start?: BigIntColumn;
  window_spent_nano?: BigIntColumn;
  window_held_nano?: BigIntColumn;
  expires_at?: BigIntColumn | null;
  /** JSON array of provider and model names; null: every one. */
  allowed?: string | null;
  rpm?: number | null;
  tpm?: number | null;
}

/**
 * The reservation of a call in flight (`Ledger.placeHold`). Settling or releasing the call deletes it: the
 * table holds open holds only, so their sum is a read of a few rows however many calls were ever made.
 */
export interface HoldsTable {
  id: string;
  account_id: string;
  request_id: string;
  amount_nano: BigIntColumn;
  owner: string;
  created_at: BigIntColumn;
  expires_at: BigIntColumn;
  /** The key of the call (migration 0012; null on holds placed before it). */
  key_id?: string | null;
  /** The window of the key's limit the hold counts in; null when the key had no limit. */
  key_window?: BigIntColumn | null;
}

/**
 * A serving process (the `owner` of its holds) and when it last said it was alive (PostgreSQL; see
 * docs/operations.md "Crash safety").
 */
export interface InstancesTable {
  owner: string;
  started_at: BigIntColumn;
  seen_at: BigIntColumn;
}

export interface LedgerTable {
  id: string;
  account_id: string;
  /**
   * credit | charge — the ledger is append-only: rows are never updated or deleted. Charges are rows here
   * only for requests settled before migration 0007; since then a request's charge is its usage row's
   * `charged_nano` (docs/operations.md "Crash safety").
   */
  kind: string;
  /** Always positive; the kind gives the direction. */
  amount_nano: BigIntColumn;
  /** The request a charge belongs to; unique, so a request is charged at most once. */
  request_id: string | null;
  note: string | null;
  created_at: BigIntColumn;
  /** The batch of the top-up code a credit was redeemed from (migration 0011); null otherwise. */
  code_batch_id?: string | null;
}

export interface UsageTable {
  request_id: string;
  account_id: string;
  key_id: string;
  provider: string | null;
  model: string | null;
  prompt_tokens: BigIntColumn;
  completion_tokens: BigIntColumn;
  usage_estimated: number;
  input_cost_nano: BigIntColumn;
  output_cost_nano: BigIntColumn;
  shortfall_nano: BigIntColumn;
  status: string;
  error_code: string | null;
  http_status: number;
  duration_ms: BigIntColumn;
  client_gone: number;
  created_at: BigIntColumn;
  /**
   * What the request was charged: input + output cost − shortfall (0 when nothing was). Null on the rows
   * written before migration 0007, whose charges are ledger rows of kind `charge`.
   */
  charged_nano: BigIntColumn | null;
  /** The part of `prompt_tokens` read from the upstream's cache (migration 0013; 0 before). */
  cache_read_tokens: BigIntColumn;
  /** The part of `prompt_tokens` written to the upstream's cache (migration 0013; 0 before). */
  cache_write_tokens: BigIntColumn;
}

/**
 * Requests refused before any hold (402), counted per account, minute, key and error code (migration
 * 0010): a flood of refusals adds to one row per minute instead of writing a usage row each.
 */
export interface RefusalsTable {
  account_id: string;
  /** Start of the minute (epoch ms, a multiple of 60,000) the refused requests started in. */
  minute_start: BigIntColumn;
  key_id: string;
  error_code: string;
  http_status: number;
  /** How many requests were refused. */
  requests: BigIntColumn;
}

/** An administrator's action (migration 0014, `shared/audit-log.ts`); append-only. */
export interface AuditLogTable {
  id: string;
  created_at: BigIntColumn;
  /** The admin's account; null when the CLI acted. */
  actor_id: string | null;
  /** The admin's email, or `cli`. */
  actor: string;
  action: string;
  /** The account acted on, when there is one. */
  account_id: string | null;
  /** The object acted on (invite, code batch, key), when there is one. */
  target_id: string | null;
  /** JSON of the action's figures. */
  detail: string | null;
}

export interface IdempotencyTable {
  account_id: string;
  idem_key: string;
  body_hash: string;
  /** in_progress | done */
  state: string;
  /** The completion id of the attempt that holds (or held) the key. */
  request_id: string;
  /** The completion as first answered, once done. */
  response_json: string | null;
  /** An in-progress attempt older than this is presumed dead (its hold expired unsettled). */
  locked_until: BigIntColumn;
  created_at: BigIntColumn;
  expires_at: BigIntColumn;
}

/** A dashboard login. The id is the SHA-256 of the session token: the token itself is never stored. */
export interface SessionsTable {
  id: string;
  account_id: string;
  created_at: BigIntColumn;
  last_seen_at: BigIntColumn;
  /** Absolute end of the session (login time + SESSION_MAX_AGE_MS). */
  expires_at: BigIntColumn;
}

/** A single-use sign-up code an admin handed out (SIGNUP=invite). Only its SHA-256 is stored. */
export interface InvitesTable {
  id: string;
  code_hash: string;
  created_by: string;
  /** When set, only this email may use the code. */
  email: string | null;
  note: string | null;
  created_at: BigIntColumn;
  expires_at: BigIntColumn;
  used_at: BigIntColumn | null;
  used_by: string | null;
  revoked_at: BigIntColumn | null;
}

/** A batch of top-up codes an admin created (migration 0011): each code credits `amount_nano` once. */
export interface CodeBatchesTable {
  id: string;
  amount_nano: BigIntColumn;
  /** How many codes the batch was created with. */
  codes: number;
  note: string | null;
  /** When its unredeemed codes stop working; null: never. */
  expires_at: BigIntColumn | null;
  /** The admin account that created it; null when made with the CLI. */
  created_by: string | null;
  created_at: BigIntColumn;
}

/** One top-up code. Only its SHA-256 is stored; `hint` shows its last characters. */
export interface TopUpCodesTable {
  hash: string;
  batch_id: string;
  /** Its place in the batch, from 1. */
  position: number;
  hint: string;
  redeemed_by: string | null;
  redeemed_at: BigIntColumn | null;
}

export interface Database {
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  holds: HoldsTable;
  instances: InstancesTable;
  ledger: LedgerTable;
  usage: UsageTable;
  refusals: RefusalsTable;
  idempotency: IdempotencyTable;
  sessions: SessionsTable;
  invites: InvitesTable;
  code_batches: CodeBatchesTable;
  topup_codes: TopUpCodesTable;
  audit_log: AuditLogTable;
}

/** Reads a BIGINT column; refuses values JavaScript cannot represent exactly. */
export function toNumber(value: BigIntColumn): number {
  const n = typeof value === 'number' ? value : Number(value);
  if (!Number.isSafeInteger(n)) throw new Error(`database value ${String(value)} is not a safe integer`);
  return n;
}

export function toNumberOrNull(value: BigIntColumn | null): number | null {
  return value === null ? null : toNumber(value);
}

/** Reads a SUM or COUNT, which is null over no rows. */
export function sumOf(value: BigIntColumn | null | undefined): number {
  return value === null || value === undefined ? 0 : toNumber(value);
}
