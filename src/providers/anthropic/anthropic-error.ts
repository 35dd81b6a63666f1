import { isRecord } from '../json-value.js';
import type { ErrorBodyReader } from '../upstream-failure-from-status.js';

/**
 * The HTTP status of each Anthropic error type: an `error` event inside a stream carries only the type.
 *
 * @see https://docs.anthropic.com/en/api/errors#http-errors
 */
const ANTHROPIC_ERROR_STATUS: Readonly<Record<string, number>> = Object.freeze({
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
});

/**
 * Reads an Anthropic error body, `{type:"error", error:{type, message}}`: its message, and the status its
 * type stands for (an unknown type names none).
 *
 * @see https://docs.anthropic.com/en/api/errors
 */
export const anthropicErrorReader: ErrorBodyReader = {
  extractMessage(body: unknown): string | undefined {
    if (!isRecord(body) || !isRecord(body.error)) return undefined;
    const { message, type } = body.error;
    if (typeof message === 'string') return message;
    return typeof type === 'string' ? type : undefined;
  },
  statusOf(body: unknown): number | undefined {
    if (!isRecord(body) || !isRecord(body.error)) return undefined;
    const { type } = body.error;
    return typeof type === 'string' && Object.hasOwn(ANTHROPIC_ERROR_STATUS, type)
      ? ANTHROPIC_ERROR_STATUS[type]
      : undefined;
  },
};
