import type { Cluster } from '../cluster/index.js';
import type { ProviderHealthTracker } from '../routing/health.js';
import type { ProviderRegistry } from '../routing/registry.js';
import type { Store } from '../store/types.js';

/** Said by `/readyz` and the start-up log when `model: "auto"` has nothing to rotate over. */
export const NO_AUTO_PROVIDER =
  'no provider of the auto list (AUTO_PROVIDERS) is active: requests with model "auto" get 503 no_provider_available';

/**
 * The `/readyz` check: ready when the database answers and at least one provider is active; the detail
 * names the database, Redis, the active providers, the auto list and the circuits not closed.
 */
export function readinessCheck(parts: {
  store: Pick<Store, 'ping'>;
  registry: ProviderRegistry;
  health: Pick<ProviderHealthTracker, 'snapshot'>;
  cluster: Pick<Cluster, 'status'>;
}): () => Promise<{ ok: boolean; detail: Record<string, unknown> }> {
  const { store, registry, health, cluster } = parts;
  return async () => {
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
  };
}
