import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { InFlight } from '../api/in-flight.js';
import type { Cluster } from '../cluster/index.js';
import type { Store } from '../store/types.js';

/** How long the calls whose upstream answered during shutdown get to settle. */
const SETTLE_AFTER_UPSTREAM_MS = 5_000;

/** What a server stops, in the order `shutdown` stops it. */
export interface ShutdownParts {
  app: FastifyInstance;
  inFlight: Pick<InFlight, 'size' | 'idle'>;
  /** The upstream pools (closing them waits for the calls still running). */
  upstream: { close?: () => Promise<void> };
  cluster: Pick<Cluster, 'close'>;
  store: Store;
  instanceId: string;
  /** PostgreSQL: this instance is forgotten by the others once its holds are released. */
  shared: boolean;
  /** The background work started with the server (sweeper, heartbeat), stopped first. */
  timers: readonly ({ stop(): void } | undefined)[];
  /** Closed last, in this order (the fallback tokenizer's thread, the store if the server opened it, the lock). */
  closeLast: readonly (() => Promise<void> | void)[];
  /** SHUTDOWN_DRAIN_MS */
  drainMs: number;
  now: () => number;
  logger: Logger;
}

/**
 * Graceful stop, in three stages: (1) drain — no new connections; requests in flight finish and settle,
 * bounded by SHUTDOWN_DRAIN_MS, after which client connections are cut; (2) upstream — the upstream calls
 * still running then go on to their answer or their deadline and are settled; (3) release — any hold
 * still open after that goes back to its balance, then the store closes.
 */
export async function shutdown(parts: ShutdownParts): Promise<void> {
  for (const timer of parts.timers) timer?.stop();
  await drain(parts);
  await finishUpstreamCalls(parts);
  await releaseAndClose(parts);
}

/** Stage 1: stop accepting and let the requests in flight finish, within SHUTDOWN_DRAIN_MS. */
async function drain({ app, inFlight, drainMs, now, logger }: ShutdownParts): Promise<void> {
  const drainEnds = now() + drainMs;
  const closed = app.close();
  if (!(await settlesWithin(closed, drainMs))) {
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
}

/**
 * Stage 2: closing the upstream pools waits for the calls still running (each ends by its deadline at the
 * latest); those that got an answer then settle, billed from their holds, before the store closes.
 */
async function finishUpstreamCalls({ upstream, inFlight, logger }: ShutdownParts): Promise<void> {
  await upstream.close?.();
  if (!(await settlesWithin(inFlight.idle(), SETTLE_AFTER_UPSTREAM_MS))) {
    logger.warn({ inFlight: inFlight.size }, 'requests still unsettled after their upstream calls ended');
  }
}

/**
 * Stage 3: whatever this process still holds now belongs to no call that can settle: it goes back to the
 * balances here, instead of at the next start (SQLite) or another instance's sweep (PostgreSQL).
 */
async function releaseAndClose(parts: ShutdownParts): Promise<void> {
  const { store, instanceId, logger } = parts;
  await parts.cluster.close();
  try {
    const left = await store.releaseHolds({ kind: 'owned_by', owner: instanceId });
    if (left > 0) logger.warn({ released: left }, 'released the holds of calls left unsettled at shutdown');
    if (parts.shared) await store.forgetInstance(instanceId);
  } catch (err) {
    logger.error({ err }, "could not release this process's holds at shutdown: they are released later");
  }
  for (const close of parts.closeLast) await close();
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
