/**
 * A labelled counter and histogram whose request path is a few additions on plain numbers.
 *
 * prom-client's own children validate and hash their label object again on every `inc`/`observe`, so
 * the two histograms and three counters a chat completion touches cost a noticeable share of all the
 * gateway does per call (`npm run bench:profile -- --mode instructions` counts it). These keep one
 * object per label set (the caller caches it) and are read by prom-client's `Registry` at scrape time
 * through the interface its own metrics implement (`get`, `getForPromString`, `reset`), so the
 * exposition text is the same as prom-client's Counter and Histogram would write.
 */
import type { Registry } from 'prom-client';

type Labels = Record<string, string>;

interface ExportedValue {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
  sharedLabels?: Labels;
}

interface Exported {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  values: ExportedValue[];
  aggregator: 'sum';
}

abstract class LightMetric<Child> {
  readonly aggregator = 'sum';
  protected children = new Map<string, { labels: Labels; child: Child }>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly string[],
    registry: Registry,
  ) {
    // The same name rules and clash check as prom-client's own metrics.
    registry.registerMetric(this as never);
  }

  /** The child of one label set (values in `labelNames` order); cache it, do not call per request. */
  labels(...values: string[]): Child {
    if (values.length !== this.labelNames.length) {
      throw new Error(`${this.name}: expected ${this.labelNames.length} label values, got ${values.length}`);
    }
    const key = JSON.stringify(values);
    let entry = this.children.get(key);
    if (entry === undefined) {
      const labels: Labels = {};
      this.labelNames.forEach((name, i) => {
        labels[name] = values[i] as string;
      });
      entry = { labels, child: this.createChild() };
      this.children.set(key, entry);
    }
    return entry.child;
  }

  /** Zeroes every label set (prom-client's `Registry.resetMetrics`); cached children keep counting. */
  reset(): void {
    for (const { child } of this.children.values()) this.zero(child);
  }

  protected abstract createChild(): Child;
  protected abstract zero(child: Child): void;
}

export interface CounterChild {
  value: number;
  inc(by?: number): void;
}

/** A monotonic counter, one value per label set. */
export class LightCounter extends LightMetric<CounterChild> {
  readonly type = 'counter';

  protected createChild(): CounterChild {
    return {
      value: 0,
      inc(by = 1) {
        this.value += by;
      },
    };
  }

  protected zero(child: CounterChild): void {
    child.value = 0;
  }

  async get(): Promise<Exported> {
    return this.getForPromString();
  }

  async getForPromString(): Promise<Exported> {
    const values: ExportedValue[] = [];
    for (const { labels, child } of this.children.values()) values.push({ labels, value: child.value });
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }
}

export interface HistogramChild {
  /** Observations per bucket (not cumulative); the last slot counts those above every bound. */
  counts: Float64Array;
  sum: number;
  count: number;
  observe(value: number): void;
}

/** A histogram with fixed upper bounds, one set of buckets per label set. */
export class LightHistogram extends LightMetric<HistogramChild> {
  readonly type = 'histogram';
  private readonly bounds: readonly number[];

  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    buckets: readonly number[],
    registry: Registry,
  ) {
    super(name, help, labelNames, registry);
    this.bounds = [...buckets].sort((a, b) => a - b);
  }

  protected createChild(): HistogramChild {
    const bounds = this.bounds;
    return {
      counts: new Float64Array(bounds.length + 1),
      sum: 0,
      count: 0,
      observe(value: number) {
        if (!Number.isFinite(value)) throw new TypeError(`histogram value is not a finite number: ${value}`);
        let i = 0;
        while (i < bounds.length && value > (bounds[i] as number)) i++;
        (this.counts[i] as number)++;
        this.sum += value;
        this.count++;
      },
    };
  }

  protected zero(child: HistogramChild): void {
    child.counts.fill(0);
    child.sum = 0;
    child.count = 0;
  }

  /** Label sets merged, as prom-client's Histogram.get() returns them. */
  async get(): Promise<Exported> {
    const data = await this.getForPromString();
    for (const v of data.values) {
      v.labels = { ...v.labels, ...v.sharedLabels };
      delete v.sharedLabels;
    }
    return data;
  }

  /** Cumulative buckets, then `+Inf`, `_sum` and `_count` per label set: prom-client's layout. */
  async getForPromString(): Promise<Exported> {
    const bucket = `${this.name}_bucket`;
    const values: ExportedValue[] = [];
    for (const { labels, child } of this.children.values()) {
      let cumulative = 0;
      this.bounds.forEach((le, i) => {
        cumulative += child.counts[i] as number;
        values.push({ labels: { le }, sharedLabels: labels, value: cumulative, metricName: bucket });
      });
      values.push(
        { labels: { le: '+Inf' }, sharedLabels: labels, value: child.count, metricName: bucket },
        { labels: {}, sharedLabels: labels, value: child.sum, metricName: `${this.name}_sum` },
        { labels: {}, sharedLabels: labels, value: child.count, metricName: `${this.name}_count` },
      );
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }
}
