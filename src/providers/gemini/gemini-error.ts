import { isRecord } from '../json-value.js';
import type { ErrorBodyReader } from '../upstream-failure-from-status.js';

/**
 * Reads a Gemini error body, `{error:{code, message, status, details}}` (sometimes wrapped in a one-item
 * array). Gemini answers a bad API key with 400 `INVALID_ARGUMENT` and reason `API_KEY_INVALID`, which is
 * the operator's credential, not the caller's request.
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
};

function errorObject(body: unknown): Record<string, unknown> | undefined {
  const unwrapped: unknown = Array.isArray(body) ? body[0] : body;
  if (!isRecord(unwrapped) || !isRecord(unwrapped.error)) return undefined;
  return unwrapped.error;
}
