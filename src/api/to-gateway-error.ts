import { GatewayError } from '../errors.js';

interface FastifyLikeError {
  code?: unknown;
  statusCode?: unknown;
  message?: unknown;
  name?: unknown;
}

/**
 * Every error the server can meet — ours, Fastify's own (bad JSON, body too large, unsupported content
 * type), or an unexpected one — as a `GatewayError`, so every error response has the documented body
 * (docs/errors.md).
 */
export function toGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  const e = (typeof err === 'object' && err !== null ? err : {}) as FastifyLikeError;
  const code = typeof e.code === 'string' ? e.code : '';
  const status = typeof e.statusCode === 'number' ? e.statusCode : 500;
  const message = typeof e.message === 'string' ? e.message : '';
  switch (code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new GatewayError('request_too_large', 'Request body is too large.');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new GatewayError(
        'unsupported_media_type',
        'Unsupported Content-Type: send the body as application/json.',
      );
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new GatewayError('invalid_json', 'Request body is empty; send a JSON object.');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new GatewayError('invalid_request', 'Content-Length does not match the body.');
  }
  if (status === 400 && (e.name === 'SyntaxError' || code === 'FST_ERR_CTP_INVALID_JSON_BODY')) {
    if (/prototype|__proto__|constructor/i.test(message)) {
      return new GatewayError(
        'invalid_json',
        'Request body contains a forbidden "__proto__" or "constructor" key.',
      );
    }
    return new GatewayError('invalid_json', 'Request body is not valid JSON.');
  }
  if (status === 404) return new GatewayError('not_found', 'Not found.');
  if (status === 405) return new GatewayError('method_not_allowed', 'Method not allowed.');
  if (status === 413) return new GatewayError('request_too_large', 'Request body is too large.');
  if (status === 415) return new GatewayError('unsupported_media_type', 'Unsupported Content-Type.');
  if (status >= 400 && status < 500) return new GatewayError('invalid_request', 'The request is invalid.');
  return new GatewayError('internal_error', 'An unexpected error occurred. Please try again.', {
    cause: err,
  });
}
