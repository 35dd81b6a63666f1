import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  LogController,
} from 'fastify';
import type { Logger } from 'pino';
import { buildOpenApi } from '../api/openapi.js';
import { OVERHEAD_HEADER, Overhead } from '../api/overhead.js';
import { type ApiDeps, apiRoutes } from '../api/routes.js';
import { toGatewayError } from '../api/to-gateway-error.js';
import type { Config } from '../config/index.js';
import { type DashboardDeps, dashboardRoutes } from '../dashboard/plugin.js';
import { clientIp } from '../dashboard/request-info.js';
import { errorBody, GatewayError } from '../errors.js';
import type { Metrics } from '../metrics/metrics.js';
import { PerMillisecond, timeToString } from '../random.js';
import { VERSION } from '../version.js';
import { clientErrorHandler } from './client-error.js';
import { dashboardStatic } from './dashboard-static.js';
import { readJsonBody } from './json-body.js';
import { lazyChildLoggerFactory } from './lazy-child-logger.js';
import { registerMetrics } from './metrics-route.js';
import { announcesBody, PendingBodies } from './pending-bodies.js';
import { redactUrl } from './redact-url.js';

export interface AppDeps extends ApiDeps {
  logger: Logger;
  /** Readiness: resolves when the database answers and at least one provider is active. */
  ready: () => Promise<{ ok: boolean; detail: Record<string, unknown> }>;
  /** Served at `GET /metrics`; absent when METRICS_ENABLED=false. */
  metrics?: Metrics;
  /** The dashboard: its JSON API at /dashboard/api and the built single-page app at /. */
  dashboard?: { deps: DashboardDeps; webRoot: string };
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** A connection silent both ways this long past REQUEST_TIMEOUT_MS is closed: no handler waits that long. */
const IDLE_MARGIN_MS = 30_000;

/**
 * How often Node looks for requests past HEADERS_TIMEOUT_MS / BODY_TIMEOUT_MS (its default, 30 s, would
 * let a 10 s timeout run to 40 s): at most a quarter of the shorter one, and at least every second.
 */
export function timeoutCheckIntervalMs(config: Config): number {
  return Math.max(
    25,
    Math.min(1_000, Math.floor(Math.min(config.headersTimeoutMs, config.bodyTimeoutMs) / 4)),
  );
}

/** Fastify app assembly: body limit, request ids, the one error → HTTP mapping, routes. */
export function buildApp(deps: AppDeps): FastifyInstance {
  const { config } = deps;
  let counter = 0;
  const time36 = new PerMillisecond((ms) => timeToString(ms, 36));
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    bodyLimit: config.bodyLimitBytes,
    // Every phase of a connection is bounded, so a client that sends slowly or not at all holds it for a
    // bounded time: the headers (HEADERS_TIMEOUT_MS) and the whole request, body included
    // (BODY_TIMEOUT_MS), both counted from the request's first byte — Node's requestTimeout ends when the
    // request has been received, not when it has been answered, so it never cuts a long upstream call —;
    // the wait for the next request on a kept-alive connection (KEEP_ALIVE_TIMEOUT_MS); and silence both
    // ways while a request is served (a handler ends by REQUEST_TIMEOUT_MS).
    http: {
      headersTimeout: config.headersTimeoutMs,
      requestTimeout: config.bodyTimeoutMs,
      connectionsCheckingInterval: timeoutCheckIntervalMs(config),
    },
    requestTimeout: config.bodyTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    connectionTimeout: config.requestTimeoutMs + IDLE_MARGIN_MS,
    clientErrorHandler: clientErrorHandler(config, deps.logger),
    // A path that does not percent-decode never reaches a route: answered here, in the documented error body.
    frameworkErrors: (error, _request, frameworkReply) => {
      const reply = frameworkReply as FastifyReply;
      const err =
        error.code === 'FST_ERR_BAD_URL'
          ? new GatewayError('invalid_request', 'The URL path is not validly percent-encoded.')
          : toGatewayError(error);
      reply.code(err.status).header('x-should-retry', 'false').type('application/json').send(errorBody(err));
    },
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    // Fastify's own 503-on-close body is not the documented error body; requests that arrive while draining
    // are served like the in-flight ones.
    return503OnClosing: false,
    // Fastify's two lines per request are replaced by the one access line of the onResponse hook below.
    logController: new LogController({ disableRequestLogging: true }),
    // The per-request child logger is built only if the request writes a line.
    childLoggerFactory: lazyChildLoggerFactory,
    requestIdHeader: false,
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      if (typeof incoming === 'string' && REQUEST_ID.test(incoming)) return incoming;
      return `req_${time36.of(Date.now())}${(counter++).toString(36)}`;
    },
  });

  // Only JSON is accepted; Fastify's built-in text/plain parser would let text bodies through.
  app.removeContentTypeParser('text/plain');

  // Bodies still arriving, per client address here and per API key once authenticated (src/api/routes.ts).
  // Past a cap the answer is 429 and the connection is closed: otherwise Node would go on reading the
  // refused body, for up to BODY_TIMEOUT_MS, on a connection counted nowhere.
  const pendingBodies = new PendingBodies(config.keyMaxPendingBodies, config.addressMaxPendingBodies);
  app.decorateRequest('pendingBody', undefined);
  app.decorateRequest('overhead', undefined);
  app.addHook('onRequest', (request, reply, done) => {
    request.overhead = new Overhead();
    reply.header('x-request-id', request.id);
    if (pendingBodies.enabled && announcesBody(request.raw)) {
      try {
        request.pendingBody = pendingBodies.start(request.raw, reply.raw, clientIp(request, config));
      } catch (err) {
        reply.header('connection', 'close');
        done(err as Error);
        return;
      }
    }
    done();
  });

  // A JSON body nested too deeply, or holding too many values, is refused from its text as it arrives,
  // before JSON.parse builds it and before anything walks it recursively; the rest is Fastify's own JSON
  // parser (which also refuses the prototype-poisoning keys).
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', (request, payload, done) => {
    readJsonBody(payload, request.headers['content-length'], config.bodyLimitBytes, (error, text) => {
      if (error === undefined) parseJson(request, text as string, done);
      else done(error, undefined);
    });
  });

  // Once a graceful stop has begun, every answer closes its connection: a client's idle keep-alive
  // socket would otherwise hold the drain open until the client's own idle timeout.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    if (request.overhead) reply.header(OVERHEAD_HEADER, request.overhead.header());
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });
  // The access line costs a hook per request: registered only when it would be written.
  if (deps.logger.isLevelEnabled('info'))
    app.addHook('onResponse', async (request, reply) => {
      request.log.info(
        {
          method: request.method,
          url: redactUrl(request.url),
          status: reply.statusCode,
          ms: Math.round(reply.elapsedTime),
        },
        'request done',
      );
    });

  app.setErrorHandler((err, request, reply) => {
    const gatewayError = toGatewayError(err);
    const fields = { code: gatewayError.code, status: gatewayError.status };
    if (!(err instanceof GatewayError) && gatewayError.status >= 500) {
      // Not a condition the gateway raised on purpose: keep the stack.
      request.log.error({ err, ...fields }, 'request failed');
    } else if (gatewayError.status >= 500 && gatewayError.code !== 'service_unavailable') {
      // Upstream trouble: the gateway already logged the details where it saw them.
      request.log.warn({ ...fields, message: gatewayError.message }, 'request failed');
    } else {
      // Refusals, including load shedding (one line each at info, so an overload is no log storm).
      request.log.info(fields, 'request refused');
    }
    if (gatewayError.retryAfterSeconds !== undefined) {
      reply.header('retry-after', String(gatewayError.retryAfterSeconds));
    }
    reply.header('x-should-retry', String(gatewayError.shouldRetry));
    return reply.code(gatewayError.status).type('application/json').send(errorBody(gatewayError));
  });

  app.setNotFoundHandler((request, reply) => {
    const err = new GatewayError('not_found', `No route for ${request.method} ${request.url.split('?')[0]}.`);
    return reply.code(404).header('x-should-retry', 'false').type('application/json').send(errorBody(err));
  });

  app.get('/healthz', async () => ({ status: 'ok' }));
  // Claude Code probes its base URL (`ANTHROPIC_BASE_URL=<base>/api`) with a HEAD before its first call.
  app.head('/api', async (_request, reply) => reply.code(200).send());
  app.get('/readyz', async (_request, reply) => {
    const result = await deps.ready();
    return reply
      .code(result.ok ? 200 : 503)
      .send({ status: result.ok ? 'ok' : 'unavailable', ...result.detail });
  });

  // Public (no key needed), outside the authenticated /api/v1 plugin; built once from the same schemas the
  // server validates with.
  const openApi = JSON.stringify(buildOpenApi(deps.config, VERSION));
  app.get('/api/v1/openapi.json', async (_request, reply) => reply.type('application/json').send(openApi));

  registerMetrics(app, deps.metrics, deps.config.metricsToken);
  app.register(apiRoutes, { prefix: '/api/v1', ...deps });
  if (deps.dashboard) {
    app.register(dashboardRoutes, { prefix: '/dashboard/api', ...deps.dashboard.deps });
    app.register(dashboardStatic, { root: deps.dashboard.webRoot });
  }
  return app;
}
