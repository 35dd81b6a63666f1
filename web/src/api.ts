/** The dashboard's JSON API (`/dashboard/api`, docs/dashboard.md): typed calls and its error shape. */

export interface Account {
  id: string;
  email: string;
  role: 'user' | 'admin';
  status: 'active' | 'disabled';
  balance: number;
  created_at: string;
}

export type SignupMode = 'open' | 'invite' | 'closed';

export type SessionInfo =
  | { authenticated: false; signup: SignupMode; api_base_url: string }
  | {
      authenticated: true;
      signup: SignupMode;
      api_base_url: string;
      account: Account;
      csrf_token: string;
      expires_at: string;
    };

export interface AccountSummary {
  account: { id: string; email: string; role: 'user' | 'admin'; created_at: string };
  balance: number;
  held: number;
  spend_today: number;
  spend_month: number;
  active_keys: number;
  key_limit: number;
}

export interface ApiKey {
  id: string;
  name: string;
  hint: string;
  status: 'active' | 'revoked';
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  spend: number;
  requests: number;
}

export interface KeyList {
  data: ApiKey[];
  active: number;
  limit: number;
}

export interface UsageEntry {
  request_id: string;
  created_at: string;
  key: { id: string; name: string | null; hint: string | null };
  provider: string | null;
  model: string | null;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  usage_estimated: boolean;
  cost: number;
  duration_ms: number;
  status: 'ok' | 'error';
  error_code: string | null;
  http_status: number;
  client_gone: boolean;
  /** 1, or for a row of refused requests (402 before any hold) how many that minute had. */
  requests: number;
}

export interface DayTotals {
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  cost: number;
}

export interface DailyUsage {
  days: (DayTotals & { date: string; refused: number; by_provider: Record<string, DayTotals> })[];
  providers: string[];
}

export interface Credit {
  id: string;
  amount: number;
  note: string | null;
  /** The top-up code batch the credit was redeemed from, else null. */
  batch_id: string | null;
  created_at: string;
}

export type LimitReset = 'daily' | 'weekly' | 'monthly' | 'never';

/** A key's own controls (`GET /keys/controls`, `PATCH /keys/:id`). */
export interface KeyControls {
  id: string;
  name: string;
  limit: {
    amount: number;
    spent: number;
    remaining: number;
    reset: LimitReset;
    resets_at: string | null;
  } | null;
  expires_at: string | null;
  allowed: string[] | null;
  rpm: number | null;
  tpm: number | null;
}

/** One provider and its model with its prices (USD per 1M tokens), from `GET /models`. */
export interface ModelPrice {
  provider: string;
  model: string;
  input_price: number;
  output_price: number;
  cache_read_price: number;
  cache_write_price: number;
  auto: boolean;
  active: boolean;
  /** The account's active keys that may use it. */
  key_ids: string[];
}

export interface ModelPrices {
  data: ModelPrice[];
  keys: { id: string; name: string; hint: string; allowed: string[] | null }[];
}

/** A batch of top-up codes, with how many were redeemed (`GET /admin/code-batches`). */
export interface CodeBatch {
  id: string;
  amount: number;
  note: string | null;
  created: number;
  redeemed: number;
  expired: number;
  created_at: string;
  expires_at: string | null;
  created_by: string;
}

export interface CodeState {
  position: number;
  hint: string;
  redeemed_by: { id: string; email: string } | null;
  redeemed_at: string | null;
}

export interface Redeemed {
  object: 'credit';
  amount: number;
  balance: number;
  batch_id: string;
}

export interface ProviderInfo {
  name: string;
  model: string;
  wire_format: string;
  in_auto_rotation: boolean;
  active: boolean;
  inactive_reason: 'not_configured' | 'disabled' | 'circuit_open' | null;
  circuit: 'closed' | 'open' | 'half_open';
  input_price: number;
  output_price: number;
  requests_last_hour: number;
  errors_last_hour: number;
  error_rate: number | null;
}

export interface Invite {
  id: string;
  email: string | null;
  note: string | null;
  status: 'open' | 'used' | 'revoked' | 'expired';
  created_at: string;
  expires_at: string;
  used_at: string | null;
  used_by: string | null;
  /** The email of the account that signed up with it. */
  used_by_email: string | null;
}

export const PROVIDERS = [
  'prov-deepseek',
  'prov-qwen',
  'prov-kimi',
  'prov-gpt-oss-120b',
  'prov-gemini',
  'prov-llama',
  'prov-mistral',
  'prov-claude',
] as const;

/** An error answer of the API, in the spec's shape `{error: {message, type, code}}`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly param: string | undefined,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

let csrfToken: string | undefined;
let onSessionEnded: () => void = () => {};

/** The session's CSRF token, sent in `X-CSRF-Token` on every state-changing call. */
export function setCsrfToken(token: string | undefined): void {
  csrfToken = token;
}

/** Called when the server says the session is gone (expired, logged out elsewhere). */
export function setSessionEndedHandler(handler: () => void): void {
  onSessionEnded = handler;
}

export async function api<T>(
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
  path: string,
  body?: unknown,
): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && csrfToken) headers['x-csrf-token'] = csrfToken;
  let res: Response;
  try {
    res = await fetch(`/dashboard/api${path}`, {
      method,
      headers,
      credentials: 'same-origin',
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  } catch {
    throw new ApiError(
      0,
      'network_error',
      'Cannot reach the server. Check your connection and retry.',
      undefined,
    );
  }
  if (res.status === 204) return undefined as T;
  const data: unknown = await res.json().catch(() => undefined);
  if (!res.ok) throw errorAnswer(res.status, data);
  return data as T;
}

/** The `ApiError` of an error answer (and word to the app when it says the session has ended). */
function errorAnswer(status: number, data: unknown): ApiError {
  const error = (data as { error?: { code?: string; message?: string; param?: string } } | undefined)?.error;
  const err = new ApiError(
    status,
    error?.code ?? 'error',
    error?.message ?? `The request failed (HTTP ${status}).`,
    error?.param,
  );
  if (err.code === 'not_authenticated') onSessionEnded();
  return err;
}

/** A query string of the set values only. */
export function query(params: Record<string, string | number | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

/** One model of the playground's list (`/api/v1/models`' entries). */
export interface PlaygroundModel {
  id: string;
  tollgate: { provider: string; pricing: { input: number; output: number }; auto: boolean; active: boolean };
}

/** The bill of a call: `usage` and Tollgate's `meta` of a `chat.completion` body or a stream's last chunk. */
export interface CallBill {
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number; cost: number };
  meta: { provider: string; cost: { input: number; output: number; total: number }; balance: number };
}

/**
 * A state-changing call whose answer is read as it arrives (the playground's stream): the raw response,
 * sent with the session's CSRF token; an error answer is thrown as `ApiError`.
 */
export async function postForStream(path: string, body: unknown, signal?: AbortSignal): Promise<Response> {
  const headers: Record<string, string> = { accept: 'text/event-stream', 'content-type': 'application/json' };
  if (csrfToken) headers['x-csrf-token'] = csrfToken;
  let res: Response;
  try {
    res = await fetch(`/dashboard/api${path}`, {
      method: 'POST',
      headers,
      credentials: 'same-origin',
      body: JSON.stringify(body),
      ...(signal ? { signal } : {}),
    });
  } catch {
    throw new ApiError(
      0,
      'network_error',
      'Cannot reach the server. Check your connection and retry.',
      undefined,
    );
  }
  if (res.ok) return res;
  throw errorAnswer(res.status, await res.json().catch(() => undefined));
}

/** Totals of a report's bucket or breakdown entry: `cost` in USD, `cost_nano` exact. */
export interface ReportTotals {
  requests: number;
  errors: number;
  refused: number;
  prompt_tokens: number;
  completion_tokens: number;
  cost: number;
  cost_nano: number;
}

/** A totals report (`/usage/report`, `/admin/usage`): one time zone, one interval, a day range. */
export interface UsageReport {
  time_zone: string;
  interval: 'day' | 'hour';
  from: string;
  to: string;
  totals: ReportTotals;
  series: (ReportTotals & { label: string; start: string })[];
  by_key: (ReportTotals & {
    key_id: string;
    name?: string | null;
    hint?: string | null;
    revoked?: boolean;
  })[];
  by_provider: (ReportTotals & { provider: string })[];
  by_model: (ReportTotals & { model: string })[];
  by_account?: (ReportTotals & { account_id: string; email: string | null })[];
  refused: { reason: string; requests: number }[];
}

/** An administrator's action (`/admin/audit`). */
export interface AuditEntry {
  id: string;
  at: string;
  actor: string;
  actor_id: string | null;
  action: string;
  account_id: string | null;
  target_id: string | null;
  detail: Record<string, unknown> | null;
}
