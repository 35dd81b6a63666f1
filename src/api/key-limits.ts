import { GatewayError } from '../errors.js';

interface Bucket {
  tokens: number;
  updatedAt: number;
}

/** A requests-per-minute bucket kept outside this process (Redis), shared by every instance. */
export interface SharedRateLimit {
  /** Takes one request; `undefined` when the shared bucket cannot be reached (the local one is used). */
  take(keyId: string, rpm: number): Promise<{ allowed: boolean; retryAfterMs: number } | undefined>;
}

/** Buckets kept before idle (full) ones are dropped; bounds memory whatever the number of keys. */
const MAX_BUCKETS = 10_000;

/**
 * Per-key limits (off until configured, docs/configuration.md): requests per minute as a token bucket
 * that holds `rpm` tokens and refills at rpm/60 per second, and requests in flight at once. Refusals are
 * 429 `rate_limit_exceeded` with the seconds until the next request would be admitted.
 */
export class KeyLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private readonly inFlight = new Map<string, number>();

  constructor(
    private readonly rpm: number,
    private readonly maxConcurrent: number,
    private readonly now: () => number = Date.now,
    private readonly shared?: SharedRateLimit,
  ) {}

  /**
   * Like `admit`, but the requests-per-minute bucket is the one shared by every instance while it is
   * reachable. Concurrency stays counted per instance.
   */
  async acquire(keyId: string): Promise<() => void> {
    if (this.rpm <= 0 || !this.shared) return this.admit(keyId);
    const decision = await this.shared.take(keyId, this.rpm);
    if (decision === undefined) return this.admit(keyId);
    if (!decision.allowed) throw this.rateLimited(decision.retryAfterMs);
    return this.enter(keyId);
  }

  /** Admits one request of `keyId` or throws 429; the returned function ends it (idempotent). */
  admit(keyId: string): () => void {
    if (this.rpm > 0) this.take(keyId);
    return this.enter(keyId);
  }

  private enter(keyId: string): () => void {
    if (this.maxConcurrent <= 0) return () => {};
    const current = this.inFlight.get(keyId) ?? 0;
    if (current >= this.maxConcurrent) {
      throw new GatewayError(
        'rate_limit_exceeded',
        `Too many concurrent requests for this API key (limit ${this.maxConcurrent}); retry when one finishes.`,
        { retryAfterSeconds: 1 },
      );
    }
    this.inFlight.set(keyId, current + 1);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const left = (this.inFlight.get(keyId) ?? 1) - 1;
      if (left <= 0) this.inFlight.delete(keyId);
      else this.inFlight.set(keyId, left);
    };
  }

  private take(keyId: string): void {
    const now = this.now();
    const perMs = this.rpm / 60_000;
    let bucket = this.buckets.get(keyId);
    if (!bucket) {
      if (this.buckets.size >= MAX_BUCKETS) this.dropFull(now);
      bucket = { tokens: this.rpm, updatedAt: now };
      this.buckets.set(keyId, bucket);
    }
    bucket.tokens = Math.min(this.rpm, bucket.tokens + (now - bucket.updatedAt) * perMs);
    bucket.updatedAt = now;
    if (bucket.tokens < 1) throw this.rateLimited((1 - bucket.tokens) / perMs);
    bucket.tokens -= 1;
  }

  private rateLimited(waitMs: number): GatewayError {
    return new GatewayError(
      'rate_limit_exceeded',
      `Rate limit of ${this.rpm} requests per minute exceeded for this API key.`,
      { retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) },
    );
  }

  private dropFull(now: number): void {
    const perMs = this.rpm / 60_000;
    for (const [key, b] of this.buckets) {
      if (b.tokens + (now - b.updatedAt) * perMs >= this.rpm) this.buckets.delete(key);
    }
    // Still full of active keys: forget the oldest rather than grow without bound.
    while (this.buckets.size >= MAX_BUCKETS) {
      const oldest = this.buckets.keys().next().value;
      if (oldest === undefined) break;
      this.buckets.delete(oldest);
    }
  }
}
