import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { LightCounter, LightHistogram } from '../../src/metrics/light-metrics.js';

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** Deterministic pseudo-random values in [0, 8): some above every bucket, some exactly on a bound. */
function* values(count: number): Generator<number> {
  let x = 12345;
  for (let i = 0; i < count; i++) {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    yield i % 17 === 0 ? (BUCKETS[i % BUCKETS.length] as number) : (x / 2 ** 31) * 8;
  }
}

describe('light metrics', () => {
  it('write the exposition text prom-client writes for the same observations', async () => {
    const reference = new Registry();
    const light = new Registry();
    const refHist = new Histogram({
      name: 'h_seconds',
      help: 'a histogram',
      labelNames: ['provider', 'outcome'],
      buckets: BUCKETS,
      registers: [reference],
    });
    const refCount = new Counter({
      name: 'c_total',
      help: 'a counter',
      labelNames: ['provider', 'status'],
      registers: [reference],
    });
    const hist = new LightHistogram('h_seconds', 'a histogram', ['provider', 'outcome'], BUCKETS, light);
    const count = new LightCounter('c_total', 'a counter', ['provider', 'status'], light);

    let i = 0;
    for (const v of values(5_000)) {
      const provider = `p${i % 3}`;
      const outcome = i % 5 === 0 ? 'timeout' : 'ok';
      refHist.labels({ provider, outcome }).observe(v);
      hist.labels(provider, outcome).observe(v);
      refCount.labels({ provider, status: String(200 + (i % 2)) }).inc(i % 4);
      count.labels(provider, String(200 + (i % 2))).inc(i % 4);
      i++;
    }
    expect(await light.metrics()).toBe(await reference.metrics());
    // The JSON form too, but for prom-client's exemplar slots (always empty here).
    const withoutExemplars = (metrics: unknown) =>
      JSON.parse(JSON.stringify(metrics, (key, value) => (key === 'exemplar' ? undefined : value)));
    expect(await light.getMetricsAsJSON()).toEqual(withoutExemplars(await reference.getMetricsAsJSON()));

    light.resetMetrics();
    reference.resetMetrics();
    hist.labels('p1', 'ok').observe(0.2);
    refHist.labels({ provider: 'p1', outcome: 'ok' }).observe(0.2);
    // After a reset prom-client forgets its label sets; the light metrics keep theirs at zero.
    expect(await light.metrics()).toContain('h_seconds_count{provider="p1",outcome="ok"} 1');
    expect(await light.metrics()).toContain('h_seconds_count{provider="p0",outcome="ok"} 0');
  });

  it('refuses a non-finite observation and a wrong number of label values', () => {
    const registry = new Registry();
    const hist = new LightHistogram('x_seconds', 'x', ['a'], BUCKETS, registry);
    expect(() => hist.labels('a').observe(Number.NaN)).toThrow(TypeError);
    expect(() => hist.labels('a', 'b')).toThrow(/expected 1 label values/);
    expect(() => new LightCounter('x_seconds', 'clash', [], registry)).toThrow(/already been registered/);
  });
});
