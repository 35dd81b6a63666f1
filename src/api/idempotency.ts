import { createHash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { GatewayError } from '../errors.js';

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** The request's `Idempotency-Key` and its body's hash (every door the same), or undefined without one. */
export function idempotencyOf(request: FastifyRequest): { key: string; bodyHash: string } | undefined {
  const header = request.headers['idempotency-key'];
  if (header === undefined) return undefined;
  if (typeof header !== 'string' || !IDEMPOTENCY_KEY.test(header)) {
    throw new GatewayError(
      'invalid_request',
      'Idempotency-Key must be 1 to 255 printable ASCII characters without spaces.',
      { param: 'Idempotency-Key' },
    );
  }
  // The parsed body re-serialised: the same request body always gives the same hash. The path is part of
  // it, so that one key cannot answer a request of another door.
  const bodyHash = createHash('sha256')
    .update(request.routeOptions.url ?? '')
    .update(JSON.stringify(request.body))
    .digest('hex');
  return { key: header, bodyHash };
}
