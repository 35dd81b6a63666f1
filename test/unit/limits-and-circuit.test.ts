import { describe, expect, it } from 'vitest';
import { InFlight } from '../../src/api/in-flight.js';
import { KeyLimiter } from '../../src/api/key-limits.js';
import { GatewayError } from '../../src/errors.js';
import { OutcomeWindow, ProviderHealthTracker } from '../../src/routing/health.js';

function retryAfterOf(fn: () => unknown): number | undefined {
  try {
    fn();
  } catch (e) {
    if (e instanceof GatewayError && e.code === 'rate_limit_exceeded') return e.retryAfterSeconds;
    throw e;
  }
  return undefined;
}

describe('KeyLimiter', () => {
  it('admits rpm requests at once, then one per 60/rpm seconds', () => {
    let t = 0;
    const limiter = new KeyLimiter(60, 0, () => t);
    for (let i = 0; i < 60; i++) limiter.admit('k');
    expect(retryAfterOf(() => limiter.admit('k'))).toBe(1);
    t += 1000;
    expect(retryAfterOf(() => limiter.admit('k'))).toBeUndefined();
    expect(retryAfterOf(() => limiter.admit('k'))).toBe(1);
    expect(retryAfterOf(() => limiter.admit('other'))).toBeUndefined();
  });

  it('tells how long to wait when the rate is low', () => {
    const limiter = new KeyLimiter(2, 0, () => 0);
    limiter.admit('k');
    limiter.admit('k');
    expect(retryAfterOf(() => limiter.admit('k'))).toBe(30);
  });

  it('counts concurrency per key and frees a slot exactly once', () => {
    const limiter = new KeyLimiter(0, 1, () => 0);
    const done = limiter.admit('k');
    expect(retryAfterOf(() => limiter.admit('k'))).toBe(1);
    done();
    done();
    const again = limiter.admit('k');
    expect(retryAfterOf(() => limiter.admit('k'))).toBe(1);
    again();
  });
});

describe('InFlight', () => {
  it('caps admissions and resolves idle() when the last one ends', async () => {
    const inFlight = new InFlight(2);
    const a = inFlight.tryEnter();
    const b = inFlight.tryEnter();
    expect(inFlight.tryEnter()).toBeUndefined();
    let idle = false;
    const waiting = inFlight.idle().then(() => {
      idle = true;
    });
    a?.();
    a?.();
    await Promise.resolve();
    expect(idle).toBe(false);
    b?.();
    await waiting;
    expect(inFlight.size).toBe(0);
  });
});

describe('ProviderHealthTracker', () => {
  const options = { windowMs: 10_000, minRequests: 4, failureRate: 0.5, coolDownMs: 1000 };

  it('opens only when the window holds enough outcomes with a high enough failure rate', () => {
    let t = 0;
    const changes: string[] = [];
    const h = new ProviderHealthTracker(
      options,
      () => t,
      (p, from, to) => changes.push(`${p}:${from}->${to}`),
    );
    h.recordSuccess('prov-qwen');
    h.recordSuccess('prov-qwen');
    h.recordFailure('prov-qwen');
    expect(h.circuit('prov-qwen')).toBe('closed'); // 3 outcomes < minRequests
    h.recordFailure('prov-qwen');
    expect(h.circuit('prov-qwen')).toBe('open'); // 2 of 4 failed = 50 %
    expect(changes).toEqual(['prov-qwen:closed->open']);
    expect(h.tryAcquire('prov-qwen')).toBe(false);
    t = 1000;
    expect(h.circuit('prov-qwen')).toBe('half_open');
    expect(h.tryAcquire('prov-qwen')).toBe(true);
    expect(h.tryAcquire('prov-qwen')).toBe(false); // one probe at a time
    h.recordFailure('prov-qwen');
    expect(h.circuit('prov-qwen')).toBe('open');
    t = 2000;
    expect(h.tryAcquire('prov-qwen')).toBe(true);
    h.recordSuccess('prov-qwen');
    expect(h.circuit('prov-qwen')).toBe('closed');
  });

  it('forgets outcomes older than the window', () => {
    let t = 0;
    const h = new ProviderHealthTracker(options, () => t);
    h.recordFailure('prov-kimi');
    h.recordFailure('prov-kimi');
    h.recordFailure('prov-kimi');
    t = 10_001;
    h.recordFailure('prov-kimi');
    expect(h.circuit('prov-kimi')).toBe('closed');
    expect(h.snapshot()).toEqual([{ provider: 'prov-kimi', circuit: 'closed', failures: 1, outcomes: 1 }]);
  });

  it('a Retry-After opens the circuit for that long (capped at 5 minutes)', () => {
    let t = 0;
    const h = new ProviderHealthTracker(options, () => t);
    h.recordFailure('prov-llama', { retryAfterMs: 7000 });
    expect(h.circuit('prov-llama')).toBe('open');
    expect(h.retryAfterMs('prov-llama')).toBe(7000);
    t = 7000;
    expect(h.circuit('prov-llama')).toBe('half_open');
    h.recordFailure('prov-llama', { retryAfterMs: 3_600_000 });
    expect(h.retryAfterMs('prov-llama')).toBe(300_000);
  });
});

describe('OutcomeWindow', () => {
  it('keeps the same outcomes and failure count as a plain list, over random pushes and expiries', () => {
    const capacity = 7;
    const ring = new OutcomeWindow(capacity);
    let model: { at: number; ok: boolean }[] = [];
    let seed = 42;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    let now = 0;
    for (let step = 0; step < 5_000; step++) {
      const r = random();
      now += Math.floor(random() * 3);
      if (r < 0.7) {
        const ok = random() < 0.6;
        ring.push(now, ok);
        model.push({ at: now, ok });
        if (model.length > capacity) model = model.slice(model.length - capacity);
      } else if (r < 0.97) {
        const oldest = now - Math.floor(random() * 10);
        ring.dropBefore(oldest);
        model = model.filter((o) => o.at >= oldest);
      } else {
        ring.clear();
        model = [];
      }
      expect(ring.length).toBe(model.length);
      expect(ring.failures).toBe(model.filter((o) => !o.ok).length);
    }
  });
});
