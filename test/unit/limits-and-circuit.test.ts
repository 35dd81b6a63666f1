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

function refusal(fn: () => unknown): GatewayError | undefined {
  try {
    fn();
  } catch (e) {
    if (e instanceof GatewayError) return e;
    throw e;
  }
  return undefined;
}

describe("KeyLimiter: a key's own requests and tokens per minute (this instance's state)", () => {
  it('its own RPM beside the global one: the stricter refuses, naming itself, and a refusal takes nothing', () => {
    let t = 0;
    const limiter = new KeyLimiter(4, 0, () => t);
    const own = { rpm: 2, tpm: null };
    limiter.admit('k', own);
    limiter.admit('k', own);
    const refused = refusal(() => limiter.admit('k', own));
    expect(refused?.code).toBe('rate_limit_exceeded');
    expect(refused?.message).toContain('own limit of 2 requests per minute');
    expect(refused?.retryAfterSeconds).toBe(30);
    // The refusals drew nothing from the global bucket: two more of its four are left for the key without
    // its own limit (the same key id, e.g. after the limit is cleared).
    for (let i = 0; i < 5; i++) refusal(() => limiter.admit('k', own));
    limiter.admit('k');
    limiter.admit('k');
    expect(refusal(() => limiter.admit('k'))?.message).toContain('Rate limit of 4 requests per minute');
    // 30 s later the own bucket has one request again, but the global one (4/min) has two.
    t = 30_000;
    limiter.admit('k', own);
    expect(refusal(() => limiter.admit('k', own))?.message).toContain('own limit of 2');
    // Other keys are not touched.
    limiter.admit('other', own);
  });

  it('its own TPM: admitted while the tokens settled in the last 60 s are under it; Retry-After when they fall under', () => {
    let t = 1_000_000;
    const limiter = new KeyLimiter(0, 0, () => t);
    const own = { rpm: null, tpm: 100 };
    limiter.admit('k', own);
    limiter.tokensSettled('k', 60);
    t += 10_000;
    limiter.admit('k', own);
    limiter.tokensSettled('k', 50);
    // 110 settled in the last minute: refused until the 60 of t=1000 s leave the window.
    t += 5_000;
    const refused = refusal(() => limiter.admit('k', own));
    expect(refused?.code).toBe('rate_limit_exceeded');
    expect(refused?.message).toContain('own limit of 100 tokens per minute');
    expect(refused?.message).toContain('110 tokens');
    expect(refused?.retryAfterSeconds).toBe(45);
    t = 1_000_000 + 59_999;
    expect(refusal(() => limiter.admit('k', own))).toBeDefined();
    t = 1_000_000 + 60_000;
    limiter.admit('k', own);
    // Tokens of a key without the limit, or none, count nothing.
    limiter.tokensSettled('k', 0);
    limiter.admit('k', own);
    expect(refusal(() => limiter.admit('free', { rpm: null, tpm: null }))).toBeUndefined();
  });

  it('a key with limits of its own asks the shared state once per call, and falls back to its own state', async () => {
    const calls: unknown[][] = [];
    let reachable = true;
    const shared = {
      take: async (keyId: string, rpm: number, own?: { rpm: number; tpm: number }) => {
        calls.push([keyId, rpm, own]);
        if (!reachable) return undefined;
        return own?.tpm
          ? { allowed: false, retryAfterMs: 12_345, refusedBy: 'key_tpm' as const, settledTokens: 77 }
          : { allowed: true, retryAfterMs: 0 };
      },
      added: [] as unknown[],
      addTokens(keyId: string, tokens: number) {
        this.added.push([keyId, tokens]);
      },
    };
    const limiter = new KeyLimiter(0, 0, () => 0, shared);
    // No limits at all: the shared state is not asked.
    (await limiter.acquire('k', { rpm: null, tpm: null }))();
    expect(calls).toEqual([]);
    (await limiter.acquire('k', { rpm: 3, tpm: null }))();
    expect(calls).toEqual([['k', 0, { rpm: 3, tpm: 0 }]]);
    const refused = await limiter.acquire('k', { rpm: null, tpm: 50 }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(GatewayError);
    expect((refused as GatewayError).message).toContain('own limit of 50 tokens per minute');
    expect((refused as GatewayError).message).toContain('77 tokens');
    expect((refused as GatewayError).retryAfterSeconds).toBe(13);
    limiter.tokensSettled('k', 40);
    expect(shared.added).toEqual([['k', 40]]);
    // Redis away: this instance's own count (40 < 50) decides.
    reachable = false;
    (await limiter.acquire('k', { rpm: null, tpm: 50 }))();
    limiter.tokensSettled('k', 10);
    expect(await limiter.acquire('k', { rpm: null, tpm: 50 }).catch((e: unknown) => e)).toBeInstanceOf(
      GatewayError,
    );
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
