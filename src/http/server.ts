import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import pino, { type Logger } from 'pino';
import { InFlight } from '../api/in-flight.js';
import { KeyLimiter } from '../api/key-limits.js';
import { Authenticator } from '../auth/authenticate.js';
import { KeyCache } from '../auth/key-cache.js';
import { Billing } from '../billing/billing.js';
import type { Config } from '../config/index.js';
import { loadTokenizer } from '../gateway/count-tokens.js';
import { Gateway, type UpstreamSender } from '../gateway/gateway.js';
import { adapterFor } from '../providers/index.js';
import { createUpstreamClient } from '../providers/upstream-client.js';
import { ProviderHealthTracker } from '../routing/health.js';
import { ProviderRegistry } from '../routing/registry.js';
import { LocalRotationCounter } from '../routing/rotation.js';
import { openStore } from '../store/index.js';
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
}

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
export async function createServer(config: Config, options: ServerOptions = {}): Promise<Server> {
  const logger = options.logger ?? createLogger(config.logLevel);
  const now = options.now ?? Date.now;
  const instanceId = `inst_${randomBytes(8).toString('hex')}`;
  const store =
    options.store ?? (await openStore(config.databaseUrl, { sqliteSynchronous: config.sqliteSynchronous }));
  await store.migrate();

  // Holds are owned by the process that placed them. On the embedded SQLite store only one server runs
  // against the file, so every hold still open at start belongs to a process that is gone.
  const released =
    store.dialect === 'sqlite'
      ? await store.releaseHolds({ kind: 'all' })
      : await store.releaseHolds({ kind: 'expired', now: now() });
  if (released > 0) logger.warn({ released }, 'released holds left open by a previous process');
  if (config.redisUrl) {
    logger.warn('REDIS_URL is set, but shared state over Redis is not part of this version; it is ignored');
  }

  const health = new ProviderHealthTracker(config.circuit, now, (provider, from, to, detail) => {
    logger.warn(
      { provider, from, to, ...detail },
      `circuit ${to === 'open' ? 'opened' : to} for ${provider}`,
    );
  });
  const registry = new ProviderRegistry(config, health);
  const authenticator = new Authenticator(store, new KeyCache(config.keyCacheTtlMs), now);
  const upstream = options.upstream ?? createUpstreamClient();
  const billing = new Billing(store, instanceId, now);
  const gateway = new Gateway({
    config,
    idempotency: store,
    billing,
    registry,
    rotation: new LocalRotationCounter(),
    upstream,
    adapterFor,
    logger,
    now,
  });

  const inFlight = new InFlight(config.maxConcurrentRequests);
  const app = buildApp({
    config,
    inFlight,
    keyLimiter: new KeyLimiter(config.keyRateLimitRpm, config.keyMaxConcurrent, now),
    authenticator,
    gateway,
    logger,
    ready: async () => {
      let database = 'ok';
      try {
        await store.ping();
      } catch {
        database = 'unreachable';
      }
      const activeProviders = registry.all().filter((s) => s.active).length;
      return {
        ok: database === 'ok' && activeProviders > 0,
        detail: {
          database,
          activeProviders,
          circuits: health.snapshot().filter((c) => c.circuit !== 'closed'),
        },
      };
    },
  });

  const sweeper = setInterval(() => {
    store
      .releaseHolds({ kind: 'expired', now: now() })
      .then((n: number) => {
        if (n > 0) logger.warn({ released: n }, 'released expired holds');
        return store.purgeIdempotency(now());
      })
      .catch((err: unknown) => logger.error({ err }, 'hold sweep failed'));
  }, config.holdSweepIntervalMs);
  sweeper.unref();

  // Warm the fallback tokenizer in the background so the first usage-less answer does not wait for it.
  loadTokenizer().catch((err: unknown) => logger.error({ err }, 'tokenizer failed to load'));

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
     * SHUTDOWN_DRAIN_MS, after which connections are cut — calls still running then are settled if
     * they finish before the store closes, else their holds are released at the next start).
     */
    async close() {
      clearInterval(sweeper);
      const drainEnds = now() + config.shutdownDrainMs;
      const closed = app.close();
      if (!(await settlesWithin(closed, config.shutdownDrainMs))) {
        logger.warn({ inFlight: inFlight.size }, 'drain deadline passed: closing open connections');
        app.server.closeAllConnections();
      }
      await closed;
      // Handlers whose client left go on to settle their upstream call: wait for them too.
      if (!(await settlesWithin(inFlight.idle(), Math.max(0, drainEnds - now())))) {
        logger.warn({ inFlight: inFlight.size }, 'requests still unsettled at shutdown; their holds expire');
      }
      await upstream.close?.();
      if (!options.store) await store.close();
    },
  };
  return server;
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
