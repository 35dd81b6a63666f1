import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import pino, { type Logger } from 'pino';
import { InFlight } from '../api/in-flight.js';
import { KeyLimiter } from '../api/key-limits.js';
import { playgroundRoutes } from '../api/playground-routes.js';
import { Authenticator } from '../auth/authenticate.js';
import { CodeRedemption } from '../auth/code-redemption.js';
import { KeyCache } from '../auth/key-cache.js';
import { LoginThrottle } from '../auth/login-throttle.js';
import { SessionManager } from '../auth/sessions.js';
import { Billing } from '../billing/billing.js';
import { connectCluster } from '../cluster/index.js';
import type { Config } from '../config/index.js';
import { Gateway, type UpstreamSender } from '../gateway/gateway.js';
import { TokenCounter } from '../gateway/token-counter.js';
import { Metrics } from '../metrics/metrics.js';
import { adapterFor } from '../providers/index.js';
import { isProviderName } from '../providers/types.js';
import { createUpstreamClient } from '../providers/upstream-client.js';
import { ProviderHealthTracker } from '../routing/health.js';
import { ProviderRegistry } from '../routing/registry.js';
import { openStore, storeOptionsFrom } from '../store/index.js';
import { lockDatabaseForServer } from '../store/sqlite/server-lock.js';
import type { Store } from '../store/types.js';
import { buildApp } from './app.js';
import { startHeartbeat } from './heartbeat.js';
import { releaseLeftoverHolds, startHoldSweeper } from './hold-sweeper.js';
import { readinessCheck } from './readiness.js';
import { shutdown } from './shutdown.js';

export { NO_AUTO_PROVIDER } from './readiness.js';

export interface Server {
  app: FastifyInstance;
  store: Store;
  registry: ProviderRegistry;
  authenticator: Authenticator;
  instanceId: string;
  /** Base URL the server listens on (after `listen`). */
  url: string | undefined;
  listen(): Promise<string>;
  /** Stops accepting, drains in-flight requests, closes upstream pools and the store. */
  close(): Promise<void>;
}

export interface ServerOptions {
  logger?: Logger;
  /** An already-open store (tests); otherwise opened from `config.databaseUrl`. */
  store?: Store;
  upstream?: UpstreamSender & { close?: () => Promise<void> };
  now?: () => number;
  /** The built dashboard to serve at `/` (default: the package's `web/dist`). */
  webRoot?: string;
}

/** `web/dist` of this package, from `src/http/` (tests) and `dist/http/` (built) alike. */
const DEFAULT_WEB_ROOT = fileURLToPath(new URL('../../web/dist/', import.meta.url));

/** Redacts secrets from every log line: keys and credentials never reach a log. */
export function createLogger(level: Config['logLevel']): Logger {
  return pino({
    level,
    redact: {
      paths: [
        'req.headers.authorization',
        'headers.authorization',
        '*.apiKey',
        'apiKey',
        '*.key',
        'key',
        'password',
      ],
      censor: '[redacted]',
    },
  });
}

/**
 * The composition root: opens the store, runs migrations, releases holds a previous process left behind,
 * wires auth → routing → billing → providers into the app, and starts the lifecycle pieces beside this
 * file: the hold sweeper (./hold-sweeper.ts), the instance heartbeat on PostgreSQL (./heartbeat.ts), the
 * `/readyz` check (./readiness.ts) and the three-stage shutdown (./shutdown.ts).
 */
export async function createServer(config: Config, options: ServerOptions = {}): Promise<Server> {
  const logger = options.logger ?? createLogger(config.logLevel);
  const now = options.now ?? Date.now;
  const instanceId = `inst_${randomBytes(8).toString('hex')}`;
  // One server per SQLite file (src/store/sqlite/server-lock.ts), taken before the store is opened: a
  // second server on the file refuses before it migrates or releases a hold. A store passed in is the
  // caller's to guard.
  const serverLock = options.store ? undefined : lockDatabaseForServer(config.databaseUrl);
  const store = options.store ?? (await openServerStore(config, logger));
  await store.migrate();

  // Holds are owned by the process that placed them (./hold-sweeper.ts): those a previous process left
  // open are released before this one serves, as are those of PostgreSQL instances gone silent.
  const shared = store.sharedByInstances;
  const holdOwner = { store, instanceId, shared, config, now, logger };
  if (shared) await store.markInstanceAlive(instanceId, now());
  await releaseLeftoverHolds(holdOwner);
  const heartbeat = shared
    ? startHeartbeat({ store, instanceId, instanceTimeoutMs: config.instanceTimeoutMs, now, logger })
    : undefined;

  // The gauges read the registry, the in-flight counter and the store when scraped, not before.
  const metrics = config.metricsEnabled
    ? new Metrics({
        openHolds: () => store.openHoldsTotal(),
        inFlight: () => inFlight.size,
        providers: () =>
          registry.all().map((s) => ({ name: s.provider.name, active: s.active, circuit: s.circuit })),
      })
    : undefined;
  const health = new ProviderHealthTracker(config.circuit, now, (provider, from, to, detail) => {
    logger.warn(
      { provider, from, to, ...detail },
      `circuit ${to === 'open' ? 'opened' : to} for ${provider}`,
    );
    metrics?.circuitChanged(provider, to);
    if (to === 'open' && !detail.shared) {
      cluster.publish({ kind: 'circuit_opened', provider, forMs: health.retryAfterMs(provider) });
    }
  });
  const registry = new ProviderRegistry(config, health);
  const authenticator = new Authenticator(store, new KeyCache(config.keyCacheTtlMs), now, {
    keyRevoked: (key) => cluster.publish({ kind: 'key_revoked', ...key }),
    accountChanged: (accountId) => cluster.publish({ kind: 'account_changed', accountId }),
  });
  // State shared with the other instances over Redis (REDIS_URL), or this process's own without it.
  const cluster = await connectCluster({
    config,
    instanceId,
    logger,
    onEvent: (event) => {
      if (event.kind === 'key_revoked' || event.kind === 'account_changed')
        authenticator.applyRemoteChange(event);
      else if (isProviderName(event.provider)) health.openFromPeer(event.provider, event.forMs);
    },
    onResync: () => authenticator.forgetAll(),
  });
  const upstream = options.upstream ?? createUpstreamClient();
  const billing = new Billing(store, instanceId, now);
  const tokenCounter = new TokenCounter(config.tokenCountTimeoutMs, {
    threads: config.tokenCountThreads,
  });
  const gateway = new Gateway({
    config,
    idempotency: store,
    billing,
    registry,
    rotation: cluster.rotation,
    upstream,
    adapterFor,
    tokenCounter,
    logger,
    now,
    observer: metrics,
  });

  const inFlight = new InFlight(config.maxConcurrentRequests);
  const keyLimiter = new KeyLimiter(config.keyRateLimitRpm, config.keyMaxConcurrent, now, cluster.rateLimit);
  const dashboardStore = store.dashboard(now);
  const codes = new CodeRedemption(store, now, cluster.attempts);
  const dashboard = {
    webRoot: options.webRoot ?? DEFAULT_WEB_ROOT,
    deps: {
      config,
      store,
      dashboardStore,
      sessions: new SessionManager(
        dashboardStore,
        { idleTimeoutMs: config.sessionIdleTimeoutMs, maxAgeMs: config.sessionMaxAgeMs },
        now,
      ),
      throttle: new LoginThrottle(now, cluster.attempts),
      codes,
      billing,
      authenticator,
      providers: () => registry.all(),
      now,
      playground: playgroundRoutes({ config, gateway, inFlight, keyLimiter }),
    },
  };
  const app = buildApp({
    config,
    inFlight,
    keyLimiter,
    authenticator,
    gateway,
    codes,
    logger,
    metrics,
    dashboard,
    ready: readinessCheck({ store, registry, health, cluster }),
  });

  const sweeper = startHoldSweeper(holdOwner, billing);

  // The fallback tokenizer's thread is started only when an upstream first answers without usage, unless
  // the operator asks for it up front.
  if (config.tokenizerPreload) tokenCounter.preload();

  const server: Server = {
    app,
    store,
    registry,
    authenticator,
    instanceId,
    url: undefined,
    async listen() {
      const address = await app.listen({ port: config.port, host: config.host });
      const url = address.replace('[::]', '127.0.0.1').replace('0.0.0.0', '127.0.0.1');
      server.url = url;
      return url;
    },
    close: () =>
      shutdown({
        app,
        inFlight,
        upstream,
        cluster,
        store,
        instanceId,
        shared,
        timers: [sweeper, heartbeat],
        closeLast: [
          () => tokenCounter.close(),
          async () => {
            if (!options.store) await store.close();
          },
          () => serverLock?.release(),
        ],
        drainMs: config.shutdownDrainMs,
        now,
        logger,
      }),
  };
  return server;
}

/** Opens the store of `DATABASE_URL`, logging its outages and cancelled statements once each. */
function openServerStore(config: Config, logger: Logger): Promise<Store> {
  return openStore(config.databaseUrl, {
    ...storeOptionsFrom(config, {
      // Logged once per outage, not per refused request.
      onAvailabilityChange: (available, cause) => {
        if (available) logger.warn('database reachable again: serving billable requests');
        else
          logger.error(
            { reason: cause instanceof Error ? cause.message : String(cause) },
            'database unreachable: billable requests get 503 until it answers again',
          );
      },
      onStatementTimeout: (cause) =>
        logger.warn(
          { reason: cause instanceof Error ? cause.message : String(cause) },
          'database statement cancelled by DATABASE_STATEMENT_TIMEOUT_MS: its request gets 503',
        ),
    }),
    ...(config.sqliteCheckpoint === 'background'
      ? {
          sqliteBackgroundCheckpoint: {
            onFailure: (err: unknown) =>
              logger.error(
                { reason: err instanceof Error ? err.message : String(err) },
                'SQLite checkpoint thread stopped: commits checkpoint the WAL themselves again',
              ),
          },
        }
      : {}),
  });
}
