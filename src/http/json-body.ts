import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { errorCodes } from 'fastify';
import { GatewayError } from '../errors.js';
import { type JsonShapeProblem, JsonShapeScan } from '../json-depth.js';

/**
 * Reads a JSON request body as it arrives: each chunk is decoded and scanned (`JsonShapeScan`) when it
 * comes, so an accepted body never costs one long stretch of the event loop (a body of some MB decoded at
 * once held every other request for that long), and a body too deep or holding too many values is
 * refused at the chunk that shows it: the rest is still read, to the body limit, so that the client, still
 * sending, gets the answer, but neither decoded nor kept. `done` gets the text, or the first problem: the
 * body's shape, more than `limit` bytes (Fastify's body-too-large error, as its own reader gives), a
 * length other than its Content-Length, or the stream's error.
 */
export function readJsonBody(
  payload: Readable & { receivedEncodedLength?: number },
  contentLengthHeader: string | undefined,
  limit: number,
  done: (error: Error | undefined, text?: string) => void,
): void {
  const contentLength = Number(contentLengthHeader);
  if (contentLength > limit) {
    done(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
    return;
  }
  const decoder = new StringDecoder('utf8');
  const scan = new JsonShapeScan();
  const pieces: string[] = [];
  let received = 0;
  /** The body's shape was refused: what is left of it is only counted. */
  let refused: Error | undefined;

  const stop = (error: Error | undefined, text?: string) => {
    payload.removeListener('data', onData);
    payload.removeListener('end', onEnd);
    payload.removeListener('error', onError);
    done(error, text);
  };
  const take = (text: string): void => {
    if (refused !== undefined || text.length === 0) return;
    const problem = scan.feed(text);
    if (problem === undefined) pieces.push(text);
    else {
      refused = shapeError(problem);
      pieces.length = 0;
    }
  };
  function onData(chunk: Buffer | string): void {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    received += bytes.length;
    // As Fastify's reader: the decoded length, and what a preParsing stream says it read, both bounded.
    if (received > limit || (payload.receivedEncodedLength ?? 0) > limit) {
      stop(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
      return;
    }
    if (refused === undefined) take(decoder.write(bytes));
  }
  function onEnd(): void {
    if (!Number.isNaN(contentLength) && (payload.receivedEncodedLength || received) !== contentLength) {
      stop(new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH());
      return;
    }
    if (refused === undefined) take(decoder.end());
    if (refused === undefined) stop(undefined, pieces.join(''));
    else stop(refused);
  }
  function onError(error: Error & { statusCode?: number }): void {
    if (!(typeof error.statusCode === 'number' && error.statusCode >= 400)) error.statusCode = 400;
    stop(error);
  }
  payload.on('data', onData);
  payload.on('end', onEnd);
  payload.on('error', onError);
  payload.resume();
}

/** The answer to a body refused for its shape: 400 `invalid_json` too deep, 413 `request_too_large` too many values. */
function shapeError(problem: JsonShapeProblem): GatewayError {
  if (problem.kind === 'too_deep') {
    return new GatewayError(
      'invalid_json',
      `Request body nests arrays and objects more than ${problem.limit} levels deep.`,
    );
  }
  return new GatewayError(
    'request_too_large',
    `Request body holds more than ${problem.limit} JSON values (objects, arrays, keys, strings, numbers, literals).`,
  );
}
