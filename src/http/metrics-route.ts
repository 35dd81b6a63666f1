import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { toGatewayError } from '../api/to-gateway-error.js';
import { GatewayError } from '../errors.js';
import type { Metrics } from '../metrics/metrics.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The error code a failed request is answered with (set by the onError hook); for metrics. */
    errorCode: string | undefined;
  }
}

/** The route whose requests `tollgate_requests_total` counts. */
const CHAT_ROUTE = '/api/v1/chat/completions';
const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/**
 * `GET /metrics` (Prometheus text format) and the hooks that count chat-completion requests: one
 * `onResponse` per request, reading the status, the error code (kept by `onError`) and the provider the
 * route recorded. Everything else is counted by the gateway (`GatewayObserver`) or read at scrape time.
 * With `token` set, the scrape needs `Authorization: Bearer <token>`, compared in constant time.
 * Without `metrics` (METRICS_ENABLED=false) nothing is counted and `/metrics` answers a JSON 404, so a
 * scraper left configured gets a clear error rather than whatever else the server would serve there.
 */
export function registerMetrics(
  app: FastifyInstance,
  metrics: Metrics | undefined,
  token: string | undefined,
): void {
  if (!metrics) {
    app.get('/metrics', async () => {
      throw new GatewayError('not_found', 'Metrics are disabled on this server (METRICS_ENABLED=false).');
    });
    return;
  }
  app.decorateRequest('errorCode', undefined);

  app.addHook('onError', (request, _reply, error, done) => {
    request.errorCode = toGatewayError(error).code;
    done();
  });

  app.addHook('onResponse', (request, reply, done) => {
    if (request.routeOptions.url === CHAT_ROUTE && request.method === 'POST') {
      const status = reply.statusCode;
      const code = status === 200 ? 'ok' : (request.errorCode ?? 'unknown');
      metrics.requestDone(request.provider, status, code, reply.elapsedTime / 1000);
    }
    done();
  });

  // Hash both sides so the comparison takes the same time whatever the lengths.
  const expected = token === undefined ? undefined : sha256(token);
  app.get('/metrics', async (request, reply) => {
    if (expected) {
      const match = BEARER.exec(request.headers.authorization ?? '');
      if (!match?.[1]) {
        throw new GatewayError(
          'missing_api_key',
          'The metrics endpoint needs "Authorization: Bearer <METRICS_TOKEN>".',
        );
      }
      if (!timingSafeEqual(sha256(match[1]), expected)) {
        throw new GatewayError('invalid_api_key', 'Invalid metrics token');
      }
    }
    const text = await metrics.render();
    return reply.type(metrics.contentType).send(text);
  });
}
