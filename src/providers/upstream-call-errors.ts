import { UpstreamError } from './types.js';

/** Error codes (ours, Node's and undici's) that mean the connection could not be made or was lost. */
export const CONNECT_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'EPIPE',
  'ETIMEDOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_CLOSED',
  'UND_ERR_DESTROYED',
  'UND_ERR_RES_CONTENT_LENGTH_MISMATCH',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
]);

/** undici's own timeout codes (a timeout, not a lost connection). */
export const TIMEOUT_CODES: ReadonlySet<string> = new Set([
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

/** The first known error code along the `cause` chain (and inside an `AggregateError`). */
export function findErrorCode(error: unknown, depth = 0): string | undefined {
  if (depth > 5 || typeof error !== 'object' || error === null) return undefined;
  const code: unknown = Reflect.get(error, 'code');
  if (typeof code === 'string' && (CONNECT_CODES.has(code) || TIMEOUT_CODES.has(code))) return code;
  if (error instanceof AggregateError) {
    for (const inner of error.errors as unknown[]) {
      const found = findErrorCode(inner, depth + 1);
      if (found !== undefined) return found;
    }
  }
  const fromCause = findErrorCode(Reflect.get(error, 'cause'), depth + 1);
  if (fromCause !== undefined) return fromCause;
  return typeof code === 'string' ? code : undefined;
}

/** The `bad_response` of an answer whose body passed the size cap. */
export function tooLarge(host: string, maxBodyBytes: number, status: number): UpstreamError {
  return new UpstreamError(
    'bad_response',
    `upstream ${host} answered a body larger than ${maxBodyBytes} bytes`,
    {
      status,
    },
  );
}
