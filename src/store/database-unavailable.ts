import { GatewayError } from '../errors.js';

/**
 * The database could not be used: no connection could be opened in time, the connection broke, or a
 * statement ran past its timeout. Nothing was committed by the statement that failed, so a billable
 * request refused with it was neither served nor charged. It is a `GatewayError` (503
 * `service_unavailable`, `Retry-After: 1`): the caller may retry, and the server keeps running and
 * recovers by itself when the database answers again.
 */
export class DatabaseUnavailableError extends GatewayError {
  constructor(cause: unknown) {
    super(
      'service_unavailable',
      isStatementTimeout(cause)
        ? 'The database did not answer in time; retry shortly.'
        : 'The service cannot reach its database right now; retry shortly.',
      { retryAfterSeconds: 1, cause },
    );
    this.name = 'DatabaseUnavailableError';
  }
}

/** Node socket errors that mean the database host cannot be reached or the connection broke. */
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
]);

/**
 * Whether a driver error means the connection itself is unusable (as opposed to a statement that failed
 * on a healthy connection, such as a constraint violation). PostgreSQL SQLSTATE classes: 08 connection
 * exception, 57P01–57P05 shutdown / cannot connect now / idle session timeout, 53 insufficient resources.
 * https://www.postgresql.org/docs/15/errcodes-appendix.html
 */
export function isConnectionFailure(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const { code, message } = err as { code?: unknown; message?: unknown };
  if (typeof code === 'string') {
    if (SOCKET_CODES.has(code) || /^(08|53)[0-9A-Z]{3}$/.test(code) || /^57P0[1-5]$/.test(code)) return true;
  }
  return (
    typeof message === 'string' &&
    /Connection terminated|not queryable|timeout exceeded when trying to connect|connection timeout/i.test(
      message,
    )
  );
}

/** A statement cancelled by `statement_timeout` (SQLSTATE 57014): the connection itself is fine. */
export function isStatementTimeout(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '57014';
}
