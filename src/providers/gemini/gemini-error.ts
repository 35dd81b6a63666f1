import { isRecord } from '../json-value.js';
import type { ErrorBodyReader } from '../upstream-failure-from-status.js';

/** The HTTP status of each Google API error status, for an error that gives no `code`. */
const GOOGLE_ERROR_STATUS: Readonly<Record<string, number>> = Object.freeze({
  INVALID_ARGUMENT: 400,
  FAILED_PRECONDITION: 400,
  OUT_OF_RANGE: 400,
  UNAUTHENTICATED: 401,
  PERMISSION_DENIED: 403,
  NOT_FOUND: 404,
  ABORTED: 409,
  ALREADY_EXISTS: 409,
  RESOURCE_EXHAUSTED: 429,
  CANCELLED: 499,
  DATA_LOSS: 500,
  UNKNOWN: 500,
  INTERNAL: 500,
  NOT_IMPLEMENTED: 501,
  UNAVAILABLE: 503,
  DEADLINE_EXCEEDED: 504,
});

/**
 * Reads a Gemini error body, `{error:{code, message, status, details}}` (sometimes wrapped in a one-item
 * array). Gemini answers a bad API key with 400 `INVALID_ARGUMENT` and reason `API_KEY_INVALID`, which is
 * the operator's credential, not the caller's request. The status an error stands for is its `code` (the
 * HTTP status), else the one Google maps its `status` to.
 *
 * @see https://ai.google.dev/gemini-api/docs/troubleshooting#error-codes
 * @see https://cloud.google.com/apis/design/errors#http_mapping
 */
export const geminiErrorReader: ErrorBodyReader = {
  extractMessage(body: unknown): string | undefined {
    const error = errorObject(body);
    if (error === undefined) return undefined;
    if (typeof error.message === 'string') return error.message;
    return typeof error.status === 'string' ? error.status : undefined;
  },
  isCredentialError(body: unknown): boolean {
    const error = errorObject(body);
    if (error === undefined || !Array.isArray(error.details)) return false;
    return error.details.some((detail: unknown) => isRecord(detail) && detail.reason === 'API_KEY_INVALID');
  },
  statusOf(body: unknown): number | undefined {
    const error = errorObject(body);
    if (error === undefined) return undefined;
    const { code, status } = error;
    if (typeof code === 'number' && Number.isInteger(code) && code >= 400 && code <= 599) return code;
    return typeof status === 'string' && Object.hasOwn(GOOGLE_ERROR_STATUS, status)
      ? GOOGLE_ERROR_STATUS[status]
      : undefined;
  },
};

function errorObject(body: unknown): Record<string, unknown> | undefined {
  const unwrapped: unknown = Array.isArray(body) ? body[0] : body;
  if (!isRecord(unwrapped) || !isRecord(unwrapped.error)) return undefined;
  return unwrapped.error;
}
