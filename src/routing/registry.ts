import type { Config } from '../config/index.js';
import { PROVIDER_NAMES, type ProviderConfig, type ProviderName } from '../providers/types.js';
import type { CircuitState, ProviderHealthTracker } from './health.js';

export type InactiveReason = 'not_configured' | 'disabled' | 'circuit_open';

export interface ProviderStatus {
  provider: ProviderConfig;
  active: boolean;
  inactiveReason: InactiveReason | undefined;
  circuit: CircuitState;
}

/**
 * The providers as configured, and which of them are active right now: credentials configured, not
 * disabled, circuit not open (docs/api.md, "Routing").
 */
export class ProviderRegistry {
  private readonly byModelName = new Map<string, ProviderName>();
  readonly autoList: readonly ProviderName[];

  constructor(
    private readonly config: Config,
    readonly health: ProviderHealthTracker,
  ) {
    for (const name of PROVIDER_NAMES) {
      const model = config.providers[name].model;
      // The first provider in catalog order owns a model name two providers share.
      if (!this.byModelName.has(model)) this.byModelName.set(model, name);
    }
    this.autoList = config.autoProviders;
  }

  get(name: ProviderName): ProviderConfig {
    return this.config.providers[name];
  }

  providerForModel(model: string): ProviderName | undefined {
    return this.byModelName.get(model);
  }

  /** Why a provider cannot serve, ignoring its circuit; undefined when it is configured and enabled. */
  configuredReason(name: ProviderName): 'not_configured' | 'disabled' | undefined {
    const p = this.config.providers[name];
    if (p.apiKey === undefined) return 'not_configured';
    if (!p.enabled) return 'disabled';
    return undefined;
  }

  status(name: ProviderName): ProviderStatus {
    const provider = this.get(name);
    const circuit = this.health.circuit(name);
    const configured = this.configuredReason(name);
    const inactiveReason: InactiveReason | undefined =
      configured ?? (this.health.isAvailable(name) ? undefined : 'circuit_open');
    return { provider, active: inactiveReason === undefined, inactiveReason, circuit };
  }

  isActive(name: ProviderName): boolean {
    return this.configuredReason(name) === undefined && this.health.isAvailable(name);
  }

  all(): ProviderStatus[] {
    return PROVIDER_NAMES.map((n) => this.status(n));
  }
}
