/** Statistics helpers: latencies kept as raw samples (ms), percentiles exact over the sorted samples. */

/** A growable buffer of latency samples in milliseconds. */
export class Samples {
  private data: Float64Array;
  private length = 0;

  constructor(initialCapacity = 1 << 16) {
    this.data = new Float64Array(initialCapacity);
  }

  add(value: number): void {
    if (this.length === this.data.length) {
      const bigger = new Float64Array(this.data.length * 2);
      bigger.set(this.data);
      this.data = bigger;
    }
    this.data[this.length++] = value;
  }

  summary(): LatencySummary {
    return summarize(this.data.subarray(0, this.length));
  }
}

/** Percentiles of a set of latency samples, in milliseconds. */
export interface LatencySummary {
  count: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
}

/** Exact percentiles (nearest rank) of the samples; NaN everywhere when there are none. */
export function summarize(values: Float64Array): LatencySummary {
  const n = values.length;
  if (n === 0) return { count: 0, mean: NaN, p50: NaN, p90: NaN, p99: NaN, p999: NaN, max: NaN };
  const sorted = Float64Array.from(values).sort();
  return {
    count: n,
    mean: sorted.reduce((sum, v) => sum + v, 0) / n,
    p50: rank(sorted, 50),
    p90: rank(sorted, 90),
    p99: rank(sorted, 99),
    p999: rank(sorted, 99.9),
    max: sorted[n - 1] as number,
  };
}

function rank(sorted: Float64Array, p: number): number {
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] as number;
}

/** The median of the finite values, or undefined when there is none. */
export function median(values: readonly (number | undefined)[]): number | undefined {
  const finite = values.filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
  if (finite.length === 0) return undefined;
  finite.sort((a, b) => a - b);
  const mid = finite.length >> 1;
  return finite.length % 2 === 1
    ? (finite[mid] as number)
    : ((finite[mid - 1] as number) + (finite[mid] as number)) / 2;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
