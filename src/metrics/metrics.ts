/**
 * Prometheus metrics of one server (`GET /metrics`), on a registry of its own — never prom-client's
 * global default registry, so several servers in one process (the tests) neither share nor clash.
 *
 * The request path only bumps counters and histograms (light-metrics.ts: plain numbers, read by the
 * registry at scrape time), through children cached per label set. What can
 * be read at scrape time instead (holds open, requests in flight, circuit states, active providers) is
 * read then, by `collect` callbacks.
 *
 * @see https://prometheus.io/docs/instrumenting/exposition_formats/
 * @see https://github.com/siimon/prom-client
 */
import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import type { GatewayObserver, UpstreamOutcome } from '../gateway/gateway.js';
import type { StreamEnding } from '../gateway/types.js';
import type { CircuitState } from '../routing/health.js';
import { type CounterChild, type HistogramChild, LightCounter, LightHistogram } from './light-metrics.js';

/** Seconds, from 5 ms (a refused request) to 120 s (the default request deadline). */
export const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/** `tollgate_circuit_state` values. */
export const CIRCUIT_VALUE: Readonly<Record<CircuitState, number>> = { closed: 0, half_open: 1, open: 2 };

/** The provider label of a request refused before a provider was chosen (before or by routing). */
export const NO_PROVIDER = 'none';

const NANO_PER_USD = 1_000_000_000;

export interface OpenHolds {
  count: number;
  amountNano: number;
}

/** What the scrape-time gauges read. */
export interface MetricsSources {
  /** Open holds in the database: how many, and how much they hold (one cheap query per scrape). */
  openHolds(): Promise<OpenHolds>;
  /** Requests in flight in this process. */
  inFlight(): number;
  /** Every provider, whether it serves now, and its circuit state. */
  providers(): readonly { name: string; active: boolean; circuit: CircuitState }[];
}

/**
 * Children of a labelled metric, cached in nested maps keyed by label value, so the request path builds
 * no key string and no label object. Unused trailing labels are passed as ''.
 */
class Children<T> {
  private readonly root = new Map<string, Map<string, Map<string, T>>>();
  constructor(private readonly create: (a: string, b: string, c: string) => T) {}

  get(a: string, b = '', c = ''): T {
    let byB = this.root.get(a);
    if (byB === undefined) {
      byB = new Map();
      this.root.set(a, byB);
    }
    let byC = byB.get(b);
    if (byC === undefined) {
      byC = new Map();
      byB.set(b, byC);
    }
    let child = byC.get(c);
    if (child === undefined) {
      child = this.create(a, b, c);
      byC.set(c, child);
    }
    return child;
  }
}

/** Money summed exactly: whole dollars plus the nanodollars below one dollar, both integers. */
interface ExactUsd {
  usd: number;
  nano: number;
}

export class Metrics implements GatewayObserver {
  readonly registry = new Registry();
  private processMetricsRegistered = false;
  /** This scrape's hold figures, shared by the two hold gauges. */
  private holds: Promise<OpenHolds> | undefined;

  private readonly requests: Children<CounterChild>;
  private readonly requestDuration: Children<HistogramChild>;
  private readonly upstreamDuration: Children<HistogramChild>;
  private readonly tokens: Children<CounterChild>;
  private readonly transitions: Children<CounterChild>;
  private readonly costs = new Map<string, ExactUsd>();
  private readonly firstToken: Children<HistogramChild>;
  private readonly streams: Children<CounterChild>;
  private streamsOpen = 0;

  constructor(private readonly sources: MetricsSources) {
    const registers = [this.registry];

    // The metrics a request touches are light ones (light-metrics.ts); prom-client's own are kept for
    // what is read at scrape time.
    const requests = new LightCounter(
      'tollgate_requests_total',
      'Chat-completion requests answered, by provider ("none" when no provider was chosen), HTTP status, and code ("ok" or the error code).',
      ['provider', 'status', 'code'],
      this.registry,
    );
    this.requests = new Children((provider, status, code) => requests.labels(provider, status, code));

    const requestDuration = new LightHistogram(
      'tollgate_request_duration_seconds',
      'Time from receiving a chat-completion request to answering it, by provider.',
      ['provider'],
      DURATION_BUCKETS,
      this.registry,
    );
    this.requestDuration = new Children((provider) => requestDuration.labels(provider));

    const upstreamDuration = new LightHistogram(
      'tollgate_upstream_duration_seconds',
      'Duration of each upstream call (every failover attempt on its own), by provider and outcome ("ok" or the failure kind).',
      ['provider', 'outcome'],
      DURATION_BUCKETS,
      this.registry,
    );
    this.upstreamDuration = new Children((provider, outcome) => upstreamDuration.labels(provider, outcome));

    const tokens = new LightCounter(
      'tollgate_tokens_total',
      'Tokens billed, by provider and kind (prompt or completion).',
      ['provider', 'kind'],
      this.registry,
    );
    this.tokens = new Children((provider, kind) => tokens.labels(provider, kind));

    const firstToken = new LightHistogram(
      'tollgate_stream_first_token_seconds',
      "Streamed answers: time from the upstream call's start to its first delta, by provider.",
      ['provider'],
      DURATION_BUCKETS,
      this.registry,
    );
    this.firstToken = new Children((provider) => firstToken.labels(provider));
    const streams = new LightCounter(
      'tollgate_streams_total',
      'Streamed answers that ended, by provider and outcome (completed, client_gone, upstream_cut).',
      ['provider', 'outcome'],
      this.registry,
    );
    this.streams = new Children((provider, outcome) => streams.labels(provider, outcome));
    const open = (): number => this.streamsOpen;
    new Gauge({
      name: 'tollgate_streams_in_flight',
      help: 'Streamed answers being relayed now.',
      registers,
      collect(this: Gauge) {
        this.set(open());
      },
    });

    const costs = this.costs;
    new Counter({
      name: 'tollgate_cost_usd_total',
      help: 'Money charged to accounts in USD, by provider: the sum of the meta.cost.total the responses reported.',
      labelNames: ['provider'],
      registers,
      // Summed as integers on the request path; turned into dollars only here.
      collect(this: Counter<'provider'>) {
        this.reset();
        for (const [provider, total] of costs) this.inc({ provider }, total.usd + total.nano / NANO_PER_USD);
      },
    });

    const holds = () => this.holds ?? this.readHolds();
    new Gauge({
      name: 'tollgate_holds_open',
      help: 'Holds open in the database: calls being served, or holds of a process that died, not yet released. NaN when the database did not answer.',
      registers,
      async collect(this: Gauge) {
        this.set((await holds()).count);
      },
    });
    new Gauge({
      name: 'tollgate_holds_open_usd',
      help: 'Money in open holds, in USD. NaN when the database did not answer.',
      registers,
      async collect(this: Gauge) {
        this.set((await holds()).amountNano / NANO_PER_USD);
      },
    });

    new Gauge({
      name: 'tollgate_inflight_requests',
      help: 'Requests to /api/v1 in flight in this process, including calls still settling after their client left.',
      registers,
      collect(this: Gauge) {
        this.set(sources.inFlight());
      },
    });

    new Gauge({
      name: 'tollgate_circuit_state',
      help: 'Circuit breaker state per provider: 0 closed, 1 half-open, 2 open.',
      labelNames: ['provider'],
      registers,
      collect(this: Gauge<'provider'>) {
        for (const p of sources.providers()) this.set({ provider: p.name }, CIRCUIT_VALUE[p.circuit]);
      },
    });
    new Gauge({
      name: 'tollgate_provider_active',
      help: '1 when a provider serves now: credentials configured, enabled, circuit not open.',
      labelNames: ['provider'],
      registers,
      collect(this: Gauge<'provider'>) {
        for (const p of sources.providers()) this.set({ provider: p.name }, p.active ? 1 : 0);
      },
    });

    const transitions = new LightCounter(
      'tollgate_circuit_transitions_total',
      'Circuit breaker transitions, by provider and the state entered (open, half_open, closed).',
      ['provider', 'to'],
      this.registry,
    );
    this.transitions = new Children((provider, to) => transitions.labels(provider, to));
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** A chat-completion request was answered; `provider` undefined when none was chosen. */
  requestDone(provider: string | undefined, status: number, code: string, seconds: number): void {
    const name = provider ?? NO_PROVIDER;
    this.requests.get(name, statusLabel(status), code).inc();
    this.requestDuration.get(name).observe(seconds);
  }

  /** One upstream call ended (`GatewayObserver`). */
  upstreamAttempt(provider: string, outcome: UpstreamOutcome, seconds: number): void {
    this.upstreamDuration.get(provider, outcome).observe(seconds);
  }

  /** A request was settled: what it was charged (`GatewayObserver`). */
  charged(provider: string, promptTokens: number, completionTokens: number, costNano: number): void {
    this.tokens.get(provider, 'prompt').inc(promptTokens);
    this.tokens.get(provider, 'completion').inc(completionTokens);
    let total = this.costs.get(provider);
    if (total === undefined) {
      total = { usd: 0, nano: 0 };
      this.costs.set(provider, total);
    }
    total.nano += costNano;
    if (total.nano >= NANO_PER_USD) {
      const whole = Math.floor(total.nano / NANO_PER_USD);
      total.usd += whole;
      total.nano -= whole * NANO_PER_USD;
    }
  }

  /** A streamed answer began (`GatewayObserver`). */
  streamStarted(provider: string, secondsToFirstToken: number): void {
    this.streamsOpen++;
    this.firstToken.get(provider).observe(secondsToFirstToken);
  }

  /** A streamed answer ended (`GatewayObserver`). */
  streamEnded(provider: string, ending: StreamEnding): void {
    this.streamsOpen--;
    this.streams.get(provider, ending).inc();
  }

  /** A provider's circuit breaker entered `to`. */
  circuitChanged(provider: string, to: CircuitState): void {
    this.transitions.get(provider, to).inc();
  }

  /** The exposition text of every metric. */
  async render(): Promise<string> {
    if (!this.processMetricsRegistered) {
      // prom-client's process metrics start an event-loop-delay monitor and a GC observer that can never
      // be stopped; registering them at the first scrape keeps servers that are never scraped (tests, the
      // CLI) free of them.
      this.processMetricsRegistered = true;
      collectDefaultMetrics({ register: this.registry });
    }
    this.holds = this.readHolds();
    try {
      return await this.registry.metrics();
    } finally {
      this.holds = undefined;
    }
  }

  private readHolds(): Promise<OpenHolds> {
    return this.sources.openHolds().catch(() => ({ count: Number.NaN, amountNano: Number.NaN }));
  }
}

/** Status label strings, made once per distinct status. */
const STATUS_LABELS = new Map<number, string>();
function statusLabel(status: number): string {
  let label = STATUS_LABELS.get(status);
  if (label === undefined) {
    label = String(status);
    STATUS_LABELS.set(status, label);
  }
  return label;
}
