import { badResponse, checkDepth, isRecord } from './json-value.js';
import { parseRetryAfterMs } from './retry-after.js';
import { UpstreamError, type UpstreamFailureKind, type UpstreamHttpResponse } from './types.js';

/** Upstream error messages are cut to this many characters before they go anywhere. */
export const MAX_UPSTREAM_MESSAGE_CHARS = 300;

/** What a wire format knows about its own error bodies. */
export interface ErrorBodyReader {
  /** The upstream's own human-readable message from a parsed error body, when it has one. */
  extractMessage(body: unknown): string | undefined;
  /**
   * Whether a 4xx body says the credential is bad even though the status is not 401/403
   * (Gemini answers an invalid API key with 400 INVALID_ARGUMENT).
   */
  isCredentialError?(body: unknown): boolean;
  /**
   * The HTTP status an error body stands for, when it says one: an error sent inside a 2xx stream has no
   * status of its own (see `streamedFailure`).
   */
  statusOf?(body: unknown): number | undefined;
}

export interface ReadOptions {
  /** Removed from any upstream message before it is used (an upstream may echo the key back). */
  secret?: string | undefined;
  /** Clock for `Retry-After` HTTP dates; defaults to `Date.now()`. */
  nowMs?: number;
}

/**
 * Status → failure kind. 401/403/404 are operator misconfiguration (wrong key, base URL or model): not
 * the caller's fault and not fixed by retrying. Other 4xx are the upstream refusing this request.
 * 408 (OpenAI's SDK retries it too) is a timeout; every 5xx, Anthropic's 529 "overloaded" included, is
 * a server error. Anything else that is not 2xx (a redirect: we never follow one) cannot be read.
 */
export function failureKindForStatus(status: number): UpstreamFailureKind {
  if (status === 429) return 'rate_limited';
  if (status === 408) return 'timeout';
  if (status >= 500 && status <= 599) return 'server_error';
  if (status === 401 || status === 403 || status === 404) return 'auth';
  if (status >= 400 && status <= 499) return 'rejected';
  return 'bad_response';
}

/** Turns a non-2xx upstream answer into the `UpstreamError` the routing layer acts on. */
export function upstreamFailureFromStatus(
  response: UpstreamHttpResponse,
  reader: ErrorBodyReader,
  options: ReadOptions = {},
): UpstreamError {
  const body = tryParseJson(response.bodyText);
  let kind = failureKindForStatus(response.status);
  if (kind === 'rejected' && body !== undefined && reader.isCredentialError?.(body) === true) kind = 'auth';
  const extracted = body === undefined ? undefined : reader.extractMessage(body);
  const upstreamMessage =
    extracted === undefined ? undefined : cleanUpstreamMessage(extracted, options.secret);
  const status = response.status;
  // A refusal's message is the upstream's own words (it may be shown to the caller); the others say
  // what happened first, for the operator's logs.
  const message =
    kind === 'rejected'
      ? (upstreamMessage ?? `upstream rejected the request (HTTP ${status})`)
      : `upstream answered HTTP ${status}${upstreamMessage === undefined ? '' : `: ${upstreamMessage}`}`;
  const retryAfterMs =
    kind === 'rate_limited' ? parseRetryAfterMs(response.headers, options.nowMs) : undefined;
  return new UpstreamError(kind, message, retryAfterMs === undefined ? { status } : { status, retryAfterMs });
}

/**
 * The first step of every adapter's `parseResponse`: a non-2xx answer throws its `UpstreamError`; a 2xx
 * whose body is not a JSON object, or is one nested too deep (`checkDepth`), throws `bad_response`;
 * otherwise the parsed body is returned.
 */
export function readSuccessBody(
  response: UpstreamHttpResponse,
  reader: ErrorBodyReader,
  options: ReadOptions = {},
): Record<string, unknown> {
  if (response.status < 200 || response.status > 299) {
    throw upstreamFailureFromStatus(response, reader, options);
  }
  const body = tryParseJson(response.bodyText);
  if (!isRecord(body)) {
    throw badResponse(
      `upstream answered HTTP ${response.status} with a body that is not a JSON object`,
      response.status,
    );
  }
  checkDepth(body, 'an answer', response.status);
  return body;
}

function tryParseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * An upstream's own message as it may be passed on: whitespace collapsed, `secret` (the key, which an
 * upstream may echo back) removed, cut to `MAX_UPSTREAM_MESSAGE_CHARS`; `undefined` when nothing is left.
 */
export function cleanUpstreamMessage(message: string, secret: string | undefined): string | undefined {
  let text = message.replace(/\s+/g, ' ').trim();
  if (secret !== undefined && secret !== '') text = text.split(secret).join('[redacted]');
  if (text === '') return undefined;
  return text.length > MAX_UPSTREAM_MESSAGE_CHARS
    ? `${text.slice(0, MAX_UPSTREAM_MESSAGE_CHARS - 1)}…`
    : text;
}
