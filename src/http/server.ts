import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import pino, { type Logger } from 'pino';
import { InFlight } from '../api/in-flight.js';
import { KeyLimiter } from '../api/key-limits.js';
import { Authenticator } from '../auth/authenticate.js';
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
import { dashboardStoreFor } from '../store/dashboard-store.js';
import { DatabaseUnavailableError, openStore, storeOptionsFrom } from '../store/index.js';
import { lockDatabaseForServer } from '../store/sqlite-server-lock.js';
import type { Store } from '../store/types.js';
import { buildApp } from './app.js';

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
 * wires auth → routing → billing → providers into the app, and starts the hold sweeper.
 */
/** Said by `/readyz` and the start-up log when `model: "auto"` has nothing to rotate over. */
export const NO_AUTO_PROVIDER =
  'no provider of the auto list (AUTO_PROVIDERS) is active: requests with model "auto" get 503 no_provider_available';

export async function createServer(config: Config, options: ServerOptions = {}): Promise<Server> {
  const logger = options.logger ?? createLogger(config.logLevel);
  const now = options.now ?? Date.now;
  const instanceId = `inst_${randomBytes(8).toString('hex')}`;
  // One server per SQLite file (src/store/sqlite-server-lock.ts), taken before the store is opened: a
  // second server on the file refuses before it migrates or releases a hold. A store passed in is the
  // caller's to guard.
  const serverLock = options.store ? undefined : lockDatabaseForServer(config.databaseUrl);
  const store =
    options.store ??
    (await openStore(config.databaseUrl, {
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
    }));
  await store.migrate();

  // Holds are owned by the process that placed them. On the embedded SQLite store only one server runs
  // against the file, so every hold still open at start belongs to a process that is gone. On PostgreSQL
  // other instances may be serving: each says it is alive every sixth of INSTANCE_TIMEOUT_MS, and the
  // holds of one silent for longer are released, as are expired holds, here and by the sweeper.
  const shared = store.dialect === 'postgres';
  if (shared) await store.markInstanceAlive(instanceId, now());
  const released = shared
    ? await releaseHoldsOfGoneInstances(store, now(), config.instanceTimeoutMs, instanceId, [])
    : await store.releaseHolds({ kind: 'all' });
  if (released > 0) logger.warn({ released }, 'released holds left open by a previous process');
  const heartbeat = shared
    ? setInterval(
        () => {
          store.markInstanceAlive(instanceId, now()).catch((err: unknown) => {
            if (!(err instanceof DatabaseUnavailableError))
              logger.error({ err }, 'instance heartbeat failed');
          });
        },
        Math.floor(config.instanceTimeoutMs / 6),
      )
    : undefined;
  heartbeat?.unref();

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
  const tokenCounter = new TokenCounter(config.tokenCountTimeoutMs);
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
  const dashboardStore = dashboardStoreFor(store, now);
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
      billing,
      authenticator,
      providers: () => registry.all(),
      now,
    },
  };
  const app = buildApp({
    config,
    inFlight,
    keyLimiter: new KeyLimiter(config.keyRateLimitRpm, config.keyMaxConcurrent, now, cluster.rateLimit),
    authenticator,
    gateway,
    logger,
    metrics,
    dashboard,
    ready: async () => {
      let database = 'ok';
      try {
        await store.ping();
      } catch {
        database = 'unreachable';
      }
      const activeProviders = registry.all().filter((s) => s.active).length;
      const autoActive = registry.autoList.filter((n) => registry.isActive(n));
      return {
        ok: database === 'ok' && activeProviders > 0,
        detail: {
          database,
          redis: cluster.status(),
          activeProviders,
          auto: { providers: registry.autoList, active: autoActive },
          ...(autoActive.length === 0 ? { warnings: [NO_AUTO_PROVIDER] } : {}),
          circuits: health.snapshot().filter((c) => c.circuit !== 'closed'),
        },
      };
    },
  });

  const sweeper = setInterval(() => {
    // Never the hold of a call this process is still serving, however late it is.
    const keep = billing.heldNow();
    const sweep = shared
      ? releaseHoldsOfGoneInstances(store, now(), config.instanceTimeoutMs, instanceId, keep)
      : store.releaseHolds({ kind: 'expired', now: now(), keep });
    sweep
      .then((n: number) => {
        if (n > 0)
          logger.warn({ released: n }, 'released holds of expired calls or of instances gone silent');
        return store.purgeIdempotency(now());
      })
      .catch((err: unknown) => {
        // An unreachable database is logged once by the store, not at every sweep.
        if (!(err instanceof DatabaseUnavailableError)) logger.error({ err }, 'hold sweep failed');
      });
  }, config.holdSweepIntervalMs);
  sweeper.unref();

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
    /**
     * Graceful stop: no new connections; requests in flight finish and settle (bounded by
     * SHUTDOWN_DRAIN_MS, after which client connections are cut — the upstream calls still running then
     * go on to their answer or their deadline and are settled; any hold still open after that is
     * released before the store closes).
     */
    async close() {
      clearInterval(sweeper);
      clearInterval(heartbeat);
      const drainEnds = now() + config.shutdownDrainMs;
      const closed = app.close();
      if (!(await settlesWithin(closed, config.shutdownDrainMs))) {
        logger.warn({ inFlight: inFlight.size }, 'drain deadline passed: closing open connections');
        app.server.closeAllConnections();
      }
      await closed;
      // Handlers whose client left go on to settle their upstream call: wait for them too.
      if (!(await settlesWithin(inFlight.idle(), Math.max(0, drainEnds - now())))) {
        logger.warn(
          { inFlight: inFlight.size },
          'requests still unsettled at shutdown: waiting for their upstream calls',
        );
      }
      // Closing the upstream pools waits for the calls still running (each ends by its deadline at the
      // latest); those that got an answer then settle, billed from their holds, before the store closes.
      await upstream.close?.();
      if (!(await settlesWithin(inFlight.idle(), SETTLE_AFTER_UPSTREAM_MS))) {
        logger.warn({ inFlight: inFlight.size }, 'requests still unsettled after their upstream calls ended');
      }
      await cluster.close();
      // Whatever this process still holds now belongs to no call that can settle: it goes back to the
      // balances here, instead of at the next start (SQLite) or another instance's sweep (PostgreSQL).
      try {
        const left = await store.releaseHolds({ kind: 'owned_by', owner: instanceId });
        if (left > 0)
          logger.warn({ released: left }, 'released the holds of calls left unsettled at shutdown');
        if (shared) await store.forgetInstance(instanceId);
      } catch (err) {
        logger.error({ err }, "could not release this process's holds at shutdown: they are released later");
      }
      await tokenCounter.close();
      if (!options.store) await store.close();
      serverLock?.release();
    },
  };
  return server;
}

/** How long the calls whose upstream answered during shutdown get to settle. */
const SETTLE_AFTER_UPSTREAM_MS = 5_000;

/**
 * PostgreSQL: releases this instance's expired holds (but those in `keep`), the expired holds of instances
 * no longer alive, and every hold of instances silent for `timeoutMs` (then forgets those instances).
 * Returns how many holds were released.
 */
async function releaseHoldsOfGoneInstances(
  store: Store,
  now: number,
  timeoutMs: number,
  self: string,
  keep: readonly string[],
): Promise<number> {
  const staleBefore = now - timeoutMs;
  // Expired holds of other live instances are theirs to sweep: one of them may still be serving the call.
  const expired = await store.releaseHolds({
    kind: 'expired',
    now,
    keep,
    self,
    ownersAliveSince: staleBefore,
  });
  const orphaned = await store.releaseHolds({ kind: 'of_stale_instances', staleBefore });
  await store.forgetStaleInstances(staleBefore);
  return expired + orphaned;
}

/** Whether `promise` settles within `ms` (it keeps running either way). */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
