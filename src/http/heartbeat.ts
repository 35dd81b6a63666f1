import type { Logger } from 'pino';
import { DatabaseUnavailableError } from '../store/index.js';
import type { Store } from '../store/types.js';

/**
 * PostgreSQL: this instance says it is alive every sixth of INSTANCE_TIMEOUT_MS, so that the other
 * instances release its holds only once it has been silent for longer (./hold-sweeper.ts). The first
 * beat is `store.markInstanceAlive` at start, before the leftover holds are released.
 */
export function startHeartbeat(options: {
  store: Store;
  instanceId: string;
  instanceTimeoutMs: number;
  now: () => number;
  logger: Logger;
}): { stop(): void } {
  const { store, instanceId, now, logger } = options;
  const heartbeat = setInterval(
    () => {
      store.markInstanceAlive(instanceId, now()).catch((err: unknown) => {
        if (!(err instanceof DatabaseUnavailableError)) logger.error({ err }, 'instance heartbeat failed');
      });
    },
    Math.floor(options.instanceTimeoutMs / 6),
  );
  heartbeat.unref();
  return { stop: () => clearInterval(heartbeat) };
}
