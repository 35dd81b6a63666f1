import { GatewayError } from '../../errors.js';

/** Anthropic's error body: `{"type":"error","error":{"type","message"}}`. */
export interface MessagesErrorBody {
  type: 'error';
  /** Anthropic's `type` and `message`, and Tollgate's `code` (docs/errors.md), which Anthropic's clients ignore. */
  error: { type: string; message: string; code: string };
}

/**
 * Anthropic's error type for each status Tollgate answers with (the statuses stay Tollgate's, so a 503
 * is `overloaded_error` at 503, where Anthropic itself would send 529).
 *
 * @see https://docs.anthropic.com/en/api/errors
 */
export function messagesErrorType(status: number): string {
  switch (status) {
    case 401:
      return 'authentication_error';
    case 402:
      return 'billing_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 503:
      return 'overloaded_error';
    case 504:
      return 'timeout_error';
  }
  return status >= 500 ? 'api_error' : 'invalid_request_error';
}

/** The Messages door's body for a `GatewayError`. */
export function messagesErrorBody(err: GatewayError): MessagesErrorBody {
  return {
    type: 'error',
    error: { type: messagesErrorType(err.status), message: err.message, code: err.code },
  };
}

/** A 400 of the Messages door about one request field. */
export function invalidField(param: string, message: string): GatewayError {
  return new GatewayError('invalid_request', `${param}: ${message}`, { param });
}
