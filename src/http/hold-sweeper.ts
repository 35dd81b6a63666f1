import type { Logger } from 'pino';
import type { Billing } from '../billing/billing.js';
import type { Config } from '../config/index.js';
import { DatabaseUnavailableError } from '../store/index.js';
import type { Store } from '../store/types.js';

/**
 * Holds are owned by the process that placed them. On the embedded SQLite store only one server runs
 * against the file, so every hold still open at start belongs to a process that is gone. On PostgreSQL
 * other instances may be serving: each says it is alive every sixth of INSTANCE_TIMEOUT_MS (./heartbeat.ts),
 * and the holds of one silent for longer are released, as are expired holds, at start and by the sweeper.
 */
export interface HoldOwner {
  store: Store;
  /** This process's instance id: the owner of the holds it places. */
  instanceId: string;
  /** PostgreSQL: other instances may share the database. */
  shared: boolean;
  config: Pick<Config, 'instanceTimeoutMs' | 'holdSweepIntervalMs'>;
  now: () => number;
  logger: Logger;
}

/** At start: releases the holds a previous process left open (SQLite: all of them). */
export async function releaseLeftoverHolds(owner: HoldOwner): Promise<void> {
  const { store, shared, config, instanceId, now } = owner;
  const released = shared
    ? await releaseHoldsOfGoneInstances(store, now(), config.instanceTimeoutMs, instanceId, [])
    : await store.releaseHolds({ kind: 'all' });
  if (released > 0) owner.logger.warn({ released }, 'released holds left open by a previous process');
}

/**
 * Every HOLD_SWEEP_INTERVAL_MS: releases expired holds (and, on PostgreSQL, those of instances gone
 * silent), never the hold of a call this process is still serving, then purges old idempotency records.
 */
export function startHoldSweeper(owner: HoldOwner, billing: Pick<Billing, 'heldNow'>): { stop(): void } {
  const { store, shared, config, instanceId, now, logger } = owner;
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
  return { stop: () => clearInterval(sweeper) };
}

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
