import { GatewayError, modelNotServed } from '../errors.js';
import { isProviderName, type ProviderConfig, type ProviderName } from '../providers/types.js';
import { type AllowList, isAllowed, notAllowed } from './key-allow.js';
import type { ProviderRegistry } from './registry.js';
import type { RotationCounter } from './rotation.js';

/** Most providers one auto-routed request may try: the first and at most 2 more (docs/api.md, "Routing"). */
export const MAX_AUTO_ATTEMPTS = 3;

export interface RouteRequest {
  model: string | undefined;
  provider: string | undefined;
}

export interface Route {
  /** Providers to try, in order. One entry unless auto-routed. */
  candidates: ProviderConfig[];
  /** True when the caller chose the provider; explicit choices are never swapped for another. */
  explicit: boolean;
}

/**
 * model/provider → ordered candidate list (docs/api.md, "Routing"):
 * - `provider` set → that provider; a `model` beside it must be "auto", the provider's name or its model.
 * - provider name in `model` → that provider; model name in `model` → the provider serving it.
 * - `model` absent or "auto" → round-robin over the active auto providers, the next ones as failover.
 *
 * Asynchronous because the rotation counter may be shared between instances (Redis).
 */
export async function resolveRoute(
  req: RouteRequest,
  registry: ProviderRegistry,
  rotation: RotationCounter,
  /** The calling key's allow-list: a provider outside it is refused (403), and auto routing skips it. */
  allowed?: AllowList,
): Promise<Route> {
  const { model, provider } = req;
  if (provider !== undefined) {
    if (!isProviderName(provider)) {
      throw new GatewayError(
        'invalid_provider',
        `Unknown provider "${truncate(provider)}". Valid providers: ${registry
          .all()
          .map((s) => s.provider.name)
          .join(', ')}.`,
        { param: 'provider' },
      );
    }
    if (
      model !== undefined &&
      model !== 'auto' &&
      model !== provider &&
      model !== registry.get(provider).model
    ) {
      throw new GatewayError(
        'model_provider_mismatch',
        `Model "${truncate(model)}" is not served by provider "${provider}" (it serves "${registry.get(provider).model}"). Omit model, or set it to "auto", "${provider}" or "${registry.get(provider).model}".`,
        { param: 'model' },
      );
    }
    return explicitRoute(provider, registry, allowed);
  }
  if (model === undefined || model === 'auto') return autoRoute(registry, rotation, allowed);
  if (isProviderName(model)) return explicitRoute(model, registry, allowed);
  const byModel = registry.providerForModel(model);
  if (byModel === undefined) {
    throw modelNotServed(model);
  }
  return explicitRoute(byModel, registry, allowed);
}

function explicitRoute(name: ProviderName, registry: ProviderRegistry, allowed: AllowList): Route {
  if (allowed && !isAllowed(registry.get(name), allowed)) {
    throw notAllowed(allowed, `"${name}" (${registry.get(name).model})`);
  }
  const status = registry.status(name);
  if (!status.active) {
    const why =
      status.inactiveReason === 'not_configured'
        ? 'it has no credentials configured'
        : status.inactiveReason === 'disabled'
          ? 'it is disabled by the operator'
          : 'it is failing and temporarily taken out of service';
    throw new GatewayError('provider_unavailable', `Provider "${name}" is not available: ${why}.`, {
      retryAfterSeconds:
        status.inactiveReason === 'circuit_open'
          ? Math.max(1, Math.ceil(registry.health.retryAfterMs(name) / 1000))
          : undefined,
    });
  }
  return { candidates: [status.provider], explicit: true };
}

async function autoRoute(
  registry: ProviderRegistry,
  rotation: RotationCounter,
  allowed: AllowList,
): Promise<Route> {
  const active = registry.autoList.filter((n) => registry.isActive(n));
  if (allowed) {
    // Auto routing rotates over what the key allows; none of it active is a refusal of the key's own.
    const permitted = active.filter((n) => isAllowed(registry.get(n), allowed));
    if (permitted.length === 0) throw notAllowed(allowed, 'any provider active for automatic routing now');
    active.splice(0, active.length, ...permitted);
  }
  if (active.length === 0) {
    throw new GatewayError(
      'no_provider_available',
      'No provider is available for automatic routing right now.',
      {
        retryAfterSeconds: 30,
      },
    );
  }
  const start = (await rotation.next()) % active.length;
  const candidates: ProviderConfig[] = [];
  for (let i = 0; i < Math.min(active.length, MAX_AUTO_ATTEMPTS); i++) {
    candidates.push(registry.get(active[(start + i) % active.length] as ProviderName));
  }
  return { candidates, explicit: false };
}

function truncate(s: string): string {
  return s.length > 80 ? `${s.slice(0, 80)}…` : s;
}
