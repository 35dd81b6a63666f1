import type { CircuitConfig } from '../config/config.js';
import type { ProviderName } from '../providers/types.js';

export type CircuitState = 'closed' | 'open' | 'half_open';

/** Longest an upstream's Retry-After may keep its circuit open. */
const MAX_RETRY_AFTER_MS = 5 * 60_000;
/** Outcomes kept per provider (the window is also bounded by time). */
const MAX_OUTCOMES = 1000;

/**
 * The outcomes of one provider's recent calls, oldest first, in a fixed ring (no allocation per call;
 * an array with a shift per call grows costly once it holds many outcomes), with the failures among them
 * counted as they come and go.
 */
export class OutcomeWindow {
  private readonly at: Float64Array;
  private readonly ok: Uint8Array;
  private start = 0;
  private size = 0;
  private failed = 0;

  constructor(readonly capacity: number) {
    this.at = new Float64Array(capacity);
    this.ok = new Uint8Array(capacity);
  }

  get length(): number {
    return this.size;
  }

  get failures(): number {
    return this.failed;
  }

  /** Adds an outcome, dropping the oldest when the ring is full. */
  push(at: number, ok: boolean): void {
    if (this.size === this.capacity) this.dropOldest();
    const i = (this.start + this.size) % this.capacity;
    this.at[i] = at;
    this.ok[i] = ok ? 1 : 0;
    if (!ok) this.failed++;
    this.size++;
  }

  /** Drops the outcomes older than `oldest`. */
  dropBefore(oldest: number): void {
    while (this.size > 0 && (this.at[this.start] as number) < oldest) this.dropOldest();
  }

  clear(): void {
    this.start = 0;
    this.size = 0;
    this.failed = 0;
  }

  private dropOldest(): void {
    if (this.ok[this.start] === 0) this.failed--;
    this.start = (this.start + 1) % this.capacity;
    this.size--;
  }
}

interface ProviderHealth {
  /** Outcomes in the window (bounded by time and by MAX_OUTCOMES). */
  outcomes: OutcomeWindow;
  /** While set and in the future, the circuit is open; once passed, half-open. */
  openUntil: number | undefined;
  probeInFlight: boolean;
}

export type CircuitListener = (
  provider: ProviderName,
  from: CircuitState,
  to: CircuitState,
  detail: {
    failures: number;
    outcomes: number;
    reason: string;
    /** True when another instance opened the circuit (shared over Redis) and this one followed. */
    shared?: boolean;
  },
) => void;

export const DEFAULT_CIRCUIT: CircuitConfig = {
  windowMs: 30_000,
  minRequests: 5,
  failureRate: 0.5,
  coolDownMs: 15_000,
};

/**
 * Per-provider circuit breaker. Closed: every outcome is kept for `windowMs`; once the window holds at
 * least `minRequests` outcomes and the share of failures reaches `failureRate`, the circuit opens. An
 * upstream 429 with Retry-After opens it for that long. Open: the provider gets no traffic (routing
 * skips it, explicit requests get 503 at once, before any hold). After `coolDownMs`, half-open: one
 * probe request is let through; its success closes the circuit, its failure opens it again.
 */
export class ProviderHealthTracker {
  private readonly state = new Map<ProviderName, ProviderHealth>();

  constructor(
    private readonly options: CircuitConfig = DEFAULT_CIRCUIT,
    private readonly now: () => number = Date.now,
    private readonly onChange: CircuitListener = () => {},
  ) {}

  circuit(name: ProviderName): CircuitState {
    const h = this.state.get(name);
    if (!h || h.openUntil === undefined) return 'closed';
    return this.now() >= h.openUntil ? 'half_open' : 'open';
  }

  /** Milliseconds until an open circuit lets a probe through (0 when not open). */
  retryAfterMs(name: ProviderName): number {
    const h = this.state.get(name);
    if (!h || h.openUntil === undefined) return 0;
    return Math.max(0, h.openUntil - this.now());
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
    const before = this.circuit(name);
    h.probeInFlight = false;
    if (before !== 'closed') {
      h.openUntil = undefined;
      h.outcomes.clear();
      this.onChange(name, before, 'closed', { failures: 0, outcomes: 0, reason: 'probe succeeded' });
    }
    this.push(h, true);
  }

  /** A failed upstream call; `retryAfterMs` (from a 429) keeps the circuit open at least that long. */
  recordFailure(name: ProviderName, options: { retryAfterMs?: number } = {}): void {
    const h = this.entry(name);
    const before = this.circuit(name);
    const wasProbe = h.probeInFlight;
    h.probeInFlight = false;
    this.push(h, false);
    const failures = h.outcomes.failures;
    const detail = { failures, outcomes: h.outcomes.length };
    const now = this.now();
    if (options.retryAfterMs !== undefined && options.retryAfterMs > 0) {
      const until = now + Math.min(options.retryAfterMs, MAX_RETRY_AFTER_MS);
      h.openUntil = Math.max(h.openUntil ?? 0, until);
      if (before !== 'open')
        this.onChange(name, before, 'open', { ...detail, reason: 'upstream asked to retry later' });
      return;
    }
    if (wasProbe) {
      h.openUntil = now + this.options.coolDownMs;
      this.onChange(name, before, 'open', { ...detail, reason: 'probe failed' });
      return;
    }
    if (before === 'closed' && detail.outcomes >= this.options.minRequests) {
      if (failures / detail.outcomes >= this.options.failureRate) {
        h.openUntil = now + this.options.coolDownMs;
        this.onChange(name, 'closed', 'open', { ...detail, reason: 'failure rate over threshold' });
      }
    }
  }

  /**
   * Opens the circuit because another instance opened its own (shared over Redis): no traffic goes there
   * from here either for `forMs`; then this instance lets its own probe through, as after any opening.
   */
  openFromPeer(name: ProviderName, forMs: number): void {
    const h = this.entry(name);
    const before = this.circuit(name);
    const until = this.now() + Math.min(forMs, Math.max(this.options.coolDownMs, MAX_RETRY_AFTER_MS));
    if (h.openUntil !== undefined && h.openUntil >= until) return;
    h.openUntil = until;
    if (before !== 'open') {
      this.prune(h);
      this.onChange(name, before, 'open', {
        failures: h.outcomes.failures,
        outcomes: h.outcomes.length,
        reason: 'opened by another instance',
        shared: true,
      });
    }
  }

  /** Ends a claimed probe without a verdict (e.g. the request failed for a non-upstream reason). */
  releaseProbe(name: ProviderName): void {
    this.entry(name).probeInFlight = false;
  }

  /** Circuit state of every provider seen so far, for /readyz and metrics. */
  snapshot(): { provider: ProviderName; circuit: CircuitState; failures: number; outcomes: number }[] {
    return [...this.state.entries()].map(([provider, h]) => {
      this.prune(h);
      return {
        provider,
        circuit: this.circuit(provider),
        failures: h.outcomes.failures,
        outcomes: h.outcomes.length,
      };
    });
  }

  private push(h: ProviderHealth, ok: boolean): void {
    const now = this.now();
    h.outcomes.push(now, ok);
    h.outcomes.dropBefore(now - this.options.windowMs);
  }

  private prune(h: ProviderHealth): void {
    h.outcomes.dropBefore(this.now() - this.options.windowMs);
  }

  private entry(name: ProviderName): ProviderHealth {
    let h = this.state.get(name);
    if (!h) {
      h = { outcomes: new OutcomeWindow(MAX_OUTCOMES), openUntil: undefined, probeInFlight: false };
      this.state.set(name, h);
    }
    return h;
  }
}
