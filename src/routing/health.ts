import type { ProviderName } from '../providers/types.js';

export type CircuitState = 'closed' | 'open' | 'half_open';

export interface HealthOptions {
  /** Consecutive failures that open the circuit. */
  failureThreshold: number;
  /** How long an open circuit sheds traffic before one probe is let through. */
  coolDownMs: number;
}

interface ProviderHealth {
  consecutiveFailures: number;
  openedAt: number | undefined;
  probeInFlight: boolean;
}

/**
 * Per-provider circuit breaker: `failureThreshold` consecutive retryable failures open the circuit;
 * after `coolDownMs` one probe request is allowed (half-open); its success closes the circuit, its
 * failure opens it again.
 */
export class ProviderHealthTracker {
  private readonly state = new Map<ProviderName, ProviderHealth>();

  constructor(
    private readonly options: HealthOptions = { failureThreshold: 5, coolDownMs: 30_000 },
    private readonly now: () => number = Date.now,
  ) {}

  circuit(name: ProviderName): CircuitState {
    const h = this.state.get(name);
    if (!h || h.openedAt === undefined) return 'closed';
    return this.now() - h.openedAt >= this.options.coolDownMs ? 'half_open' : 'open';
  }

  /** Whether a request may be sent now (claims the single half-open probe slot when it applies). */
  tryAcquire(name: ProviderName): boolean {
    const circuit = this.circuit(name);
    if (circuit === 'closed') return true;
    if (circuit === 'open') return false;
    const h = this.entry(name);
    if (h.probeInFlight) return false;
    h.probeInFlight = true;
    return true;
  }

  /** Whether routing should consider the provider at all (closed, or ready for a probe). */
  isAvailable(name: ProviderName): boolean {
    const circuit = this.circuit(name);
    return circuit === 'closed' || (circuit === 'half_open' && !this.entry(name).probeInFlight);
  }

  recordSuccess(name: ProviderName): void {
    const h = this.entry(name);
    h.consecutiveFailures = 0;
    h.openedAt = undefined;
    h.probeInFlight = false;
  }

  recordFailure(name: ProviderName): void {
    const h = this.entry(name);
    h.consecutiveFailures += 1;
    const wasProbe = h.probeInFlight;
    h.probeInFlight = false;
    if (wasProbe || h.consecutiveFailures >= this.options.failureThreshold) h.openedAt = this.now();
  }

  /** Ends a claimed probe without a verdict (e.g. the request failed for a non-upstream reason). */
  releaseProbe(name: ProviderName): void {
    this.entry(name).probeInFlight = false;
  }

  private entry(name: ProviderName): ProviderHealth {
    let h = this.state.get(name);
    if (!h) {
      h = { consecutiveFailures: 0, openedAt: undefined, probeInFlight: false };
      this.state.set(name, h);
    }
    return h;
  }
}
