import type { Logger } from 'pino';
import type { SharedAttemptStore } from '../auth/login-throttle.js';
import type { Config } from '../config/index.js';
import { redactUrlPassword } from '../redact-url.js';
import { LocalRotationCounter, type RotationCounter } from '../routing/rotation.js';
import type { ClusterEvent } from './change-bus.js';
import { ATTEMPTS_TIMEOUT_MS, SharedAttempts } from './shared-attempts.js';
import { type OwnRates, type RateDecision, SharedRateLimit } from './shared-rate-limit.js';
import { SharedRotationCounter } from './shared-rotation.js';

export type { ClusterEvent } from './change-bus.js';
export type { OwnRates, RateDecision } from './shared-rate-limit.js';

/**
 * State shared by the instances of one deployment over Redis (`REDIS_URL`), or this process's own when
 * there is none. Nothing here is money: balances and holds live only in the database.
 */
export interface Cluster {
  /** The auto-rotation counter (shared when Redis is up). */
  rotation: RotationCounter;
  /**
   * The per-key requests-per-minute buckets (`KEY_RATE_LIMIT_RPM`'s and the key's own) and the key's
   * settled tokens of the last minute across instances, or undefined without Redis.
   */
  rateLimit:
    | {
        take(keyId: string, rpm: number, own?: OwnRates): Promise<RateDecision | undefined>;
        addTokens(keyId: string, tokens: number): void;
      }
    | undefined;
  /** The login throttle's windows across instances, or undefined without Redis. */
  attempts: SharedAttemptStore | undefined;
  /** Tells the other instances (fire and forget: each receiver has its own bound if it is missed). */
  publish(event: ClusterEvent): void;
  /** For /readyz: `off` (no REDIS_URL), `ok`, or `unavailable` (degraded to per-instance state). */
  status(): 'off' | 'ok' | 'unavailable';
  close(): Promise<void>;
}

export interface ClusterOptions {
  config: Pick<Config, 'redisUrl' | 'redisKeyPrefix' | 'redisTimeoutMs'>;
  instanceId: string;
  logger: Logger;
  /** An event from another instance. */
  onEvent: (event: ClusterEvent) => void;
  /** The connection came back: events may have been missed meanwhile. */
  onResync: () => void;
  /** How long start-up waits for Redis before going on without it (default 1 s). */
  connectWaitMs?: number;
}

/** Loaded only when Redis is configured: ioredis costs tens of MB resident. */
async function loadRedis() {
  const [{ RedisLink }, { ChangeBus }] = await Promise.all([
    import('./redis-link.js'),
    import('./change-bus.js'),
  ]);
  return { RedisLink, ChangeBus };
}

/** Per-process state only: what an instance does without Redis. */
export function localCluster(): Cluster {
  return {
    rotation: new LocalRotationCounter(),
    rateLimit: undefined,
    attempts: undefined,
    publish: () => {},
    status: () => 'off',
    close: async () => {},
  };
}

/**
 * Connects to Redis when `REDIS_URL` is set. Start-up waits briefly for the connection and then goes on
 * regardless: a Redis that is down at start is joined in the background when it comes up.
 */
export async function connectCluster(options: ClusterOptions): Promise<Cluster> {
  const { config, logger } = options;
  if (!config.redisUrl) return localCluster();
  const prefix = config.redisKeyPrefix;
  const { RedisLink, ChangeBus } = await loadRedis();
  const link = new RedisLink({
    url: config.redisUrl,
    timeoutMs: config.redisTimeoutMs,
    logger,
    name: `tollgate-${options.instanceId}`,
  });
  // The login throttle's own connection: its commands may wait longer than the requests' (see
  // ATTEMPTS_TIMEOUT_MS), and its timeouts must not make the requests' commands back off, nor theirs it.
  const attemptsLink = new RedisLink({
    url: config.redisUrl,
    timeoutMs: Math.max(config.redisTimeoutMs, ATTEMPTS_TIMEOUT_MS),
    logger,
    name: `tollgate-${options.instanceId}-attempts`,
    logsOutages: false,
  });
  const bus = new ChangeBus(link, config.redisUrl, `${prefix}events`, options.instanceId);
  const waitMs = options.connectWaitMs ?? 1_000;
  const [connected, subscribed] = await Promise.all([
    link.ready(waitMs),
    bus.listen(options.onEvent, options.onResync, waitMs),
    attemptsLink.ready(waitMs),
  ]);
  if (connected && subscribed)
    logger.info({ redis: redactUrlPassword(config.redisUrl) }, 'sharing state over Redis');
  const rateLimit = new SharedRateLimit(link, `${prefix}rate:`);
  return {
    rotation: new SharedRotationCounter(link, `${prefix}rotation`),
    rateLimit,
    attempts: new SharedAttempts(attemptsLink, `${prefix}attempts:`),
    publish(event) {
      void bus.publish(event);
    },
    status: () => (link.usable() ? 'ok' : 'unavailable'),
    async close() {
      bus.close();
      await Promise.all([link.close(), attemptsLink.close()]);
    },
  };
}

/**
 * For short-lived processes (the CLI): announces one event and disconnects. Waits at most about a second
 * in all; false when Redis could not be reached (the instances' 1 s key cache bound still applies).
 */
export async function announce(
  config: Pick<Config, 'redisUrl' | 'redisKeyPrefix' | 'redisTimeoutMs'>,
  logger: Logger,
  event: ClusterEvent,
): Promise<boolean> {
  if (!config.redisUrl) return false;
  const { RedisLink, ChangeBus } = await loadRedis();
  const link = new RedisLink({
    url: config.redisUrl,
    timeoutMs: Math.max(config.redisTimeoutMs, 500),
    logger,
    name: 'tollgate-cli',
  });
  try {
    if (!(await link.ready(1_000))) return false;
    return await new ChangeBus(link, config.redisUrl, `${config.redisKeyPrefix}events`, 'cli').publish(event);
  } finally {
    await link.close();
  }
}
