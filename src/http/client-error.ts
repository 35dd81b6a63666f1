import { type ServerResponse, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import type { Config } from '../config/index.js';
import { errorBody, GatewayError } from '../errors.js';

/** Node's socket, with the response it is writing (Node's own field; absent between requests). */
type ServerSocket = Socket & { _httpMessage?: ServerResponse | null };

/** A whole HTTP response closing its connection, with `error` in the documented error body. */
function closingResponse(status: number, error: GatewayError): string {
  const body = JSON.stringify(errorBody(error));
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
    'Connection: close\r\n' +
    'Content-Type: application/json\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    `x-should-retry: ${error.shouldRetry}\r\n\r\n${body}`
  );
}

/**
 * Answers what Node refuses before a request reaches Fastify — a request not received in time
 * (HEADERS_TIMEOUT_MS / BODY_TIMEOUT_MS), headers too large, a malformed request — in the documented
 * error body (docs/errors.md), then closes the connection. Fastify's own answer to these has another shape.
 */
export function clientErrorHandler(
  config: Config,
  logger: Logger,
): (err: Error & { code?: string }, socket: Socket) => void {
  // Built once: under a flood of slow clients thousands of these can fall due in the same check.
  const answers = {
    timeout: {
      status: 408,
      code: 'invalid_request',
      text: closingResponse(
        408,
        new GatewayError(
          'invalid_request',
          `The request was not received in time: its headers must arrive within ${config.headersTimeoutMs} ms ` +
            `and the whole request within ${config.bodyTimeoutMs} ms of its first byte. The connection is closed.`,
          // Sent again in time, the same request may well get through.
          { shouldRetry: true },
        ),
      ),
    },
    headersTooLarge: {
      status: 431,
      code: 'invalid_request',
      text: closingResponse(431, new GatewayError('invalid_request', 'The request headers are too large.')),
    },
    chunkExtensionsTooLarge: {
      status: 413,
      code: 'request_too_large',
      text: closingResponse(
        413,
        new GatewayError('request_too_large', 'The chunk extensions of the request are too large.'),
      ),
    },
    malformed: {
      status: 400,
      code: 'invalid_request',
      text: closingResponse(400, new GatewayError('invalid_request', 'The request is not valid HTTP.')),
    },
  };
  return (err, socket) => {
    // A reset connection has nobody left to answer.
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    const answer =
      err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? answers.timeout
        : err.code === 'HPE_HEADER_OVERFLOW'
          ? answers.headersTooLarge
          : err.code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW'
            ? answers.chunkExtensionsTooLarge
            : answers.malformed;
    logger.info({ code: answer.code, status: answer.status, reason: err.code }, 'request refused');
    // Like Node's own handler: no answer once a response has begun on this connection, or the client
    // would read it as part of that one.
    const response = (socket as ServerSocket)._httpMessage;
    if (socket.writable && !response?.headersSent) socket.write(answer.text);
    socket.destroy();
  };
}
