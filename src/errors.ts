/**
 * The one error type of Tollgate. Every layer raises `GatewayError`; `src/http/` alone turns it into
 * the error body `{ error: { message, type, code } }` (docs/errors.md).
 */

export const ERROR_CODES = {
  missing_api_key: { status: 401, type: 'authentication_error' },
  invalid_api_key: { status: 401, type: 'authentication_error' },
  insufficient_balance: { status: 402, type: 'insufficient_balance' },
  key_limit_exceeded: { status: 402, type: 'insufficient_balance' },
  key_expired: { status: 401, type: 'authentication_error' },
  model_not_allowed: { status: 403, type: 'permission_error' },
  invalid_messages: { status: 400, type: 'invalid_request_error' },
  streaming_not_supported: { status: 400, type: 'invalid_request_error' },
  invalid_request: { status: 400, type: 'invalid_request_error' },
  unsupported_parameter: { status: 400, type: 'invalid_request_error' },
  invalid_json: { status: 400, type: 'invalid_request_error' },
  invalid_provider: { status: 400, type: 'invalid_request_error' },
  model_provider_mismatch: { status: 400, type: 'invalid_request_error' },
  upstream_rejected: { status: 400, type: 'invalid_request_error' },
  not_found: { status: 404, type: 'invalid_request_error' },
  model_not_found: { status: 404, type: 'invalid_request_error' },
  method_not_allowed: { status: 405, type: 'invalid_request_error' },
  idempotency_in_progress: { status: 409, type: 'invalid_request_error' },
  idempotency_key_reused: { status: 422, type: 'invalid_request_error' },
  request_too_large: { status: 413, type: 'invalid_request_error' },
  unsupported_media_type: { status: 415, type: 'invalid_request_error' },
  rate_limit_exceeded: { status: 429, type: 'rate_limit_error' },
  internal_error: { status: 500, type: 'server_error' },
  provider_error: { status: 502, type: 'upstream_error' },
  stream_incomplete: { status: 502, type: 'upstream_error' },
  provider_unavailable: { status: 503, type: 'upstream_error' },
  no_provider_available: { status: 503, type: 'upstream_error' },
  service_unavailable: { status: 503, type: 'server_error' },
  provider_timeout: { status: 504, type: 'upstream_error' },
  // The dashboard's own API (docs/dashboard.md).
  not_authenticated: { status: 401, type: 'authentication_error' },
  invalid_credentials: { status: 401, type: 'authentication_error' },
  csrf_failed: { status: 403, type: 'permission_error' },
  forbidden: { status: 403, type: 'permission_error' },
  account_disabled: { status: 403, type: 'permission_error' },
  signup_closed: { status: 403, type: 'permission_error' },
  invalid_invite: { status: 400, type: 'invalid_request_error' },
  email_taken: { status: 409, type: 'invalid_request_error' },
  key_limit_reached: { status: 409, type: 'invalid_request_error' },
  too_many_attempts: { status: 429, type: 'rate_limit_error' },
  // Top-up codes (docs/api.md "Top-up codes").
  invalid_code: { status: 400, type: 'invalid_request_error' },
} as const satisfies Record<string, { status: number; type: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface GatewayErrorOptions {
  /** Seconds the client should wait before retrying (sent as `Retry-After`). */
  retryAfterSeconds?: number;
  /** The request parameter the error is about, as OpenAI's `error.param`. */
  param?: string;
  /** Whether retrying the same request may succeed (`x-should-retry`); by default from the code. */
  shouldRetry?: boolean;
  cause?: unknown;
}

/**
 * Codes for which a retry of the same request may succeed. openai-node retries 408/409/429/5xx unless
 * the response says `x-should-retry: false`, so every error response carries the header explicitly.
 */
const RETRYABLE_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'idempotency_in_progress',
  'rate_limit_exceeded',
  'provider_error',
  'provider_unavailable',
  'no_provider_available',
  'service_unavailable',
  'provider_timeout',
]);

export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly type: string;
  readonly retryAfterSeconds: number | undefined;
  readonly param: string | undefined;
  readonly shouldRetry: boolean;

  constructor(code: ErrorCode, message: string, options: GatewayErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'GatewayError';
    this.code = code;
    this.status = ERROR_CODES[code].status;
    this.type = ERROR_CODES[code].type;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.param = options.param;
    this.shouldRetry = options.shouldRetry ?? RETRYABLE_CODES.has(code);
  }
}

export interface ErrorBody {
  error: { message: string; type: string; code: string; param?: string };
}

/** The error body of a `GatewayError` (docs/errors.md). */
export function errorBody(err: GatewayError): ErrorBody {
  const body: ErrorBody = { error: { message: err.message, type: err.type, code: err.code } };
  if (err.param !== undefined) body.error.param = err.param;
  return body;
}

export function isGatewayError(value: unknown): value is GatewayError {
  return value instanceof GatewayError;
}

/**
 * 404 `model_not_found` for a model name this gateway does not serve, said as such: a client that shows
 * it (Claude Code, Codex) must not make the user think the model itself does not exist.
 */
export function modelNotServed(model: string): GatewayError {
  return new GatewayError(
    'model_not_found',
    `This Tollgate gateway does not serve the model "${model.slice(0, 200)}". Use "auto", a provider name or a model listed by GET /api/v1/models, or ask the gateway's operator to map the name to a provider (MODEL_ALIASES).`,
    { param: 'model' },
  );
}
