import { GatewayError } from '../errors.js';

/** Which limit refused a request: `KEY_RATE_LIMIT_RPM`, or the key's own requests or tokens per minute. */
type RateLimitName = 'rpm' | 'key_rpm' | 'key_tpm';

interface RateDecision {
  allowed: boolean;
  /** When refused: milliseconds until one request would be admitted. */
  retryAfterMs: number;
  /** When refused: the limit passed (the first one, when several are). */
  refusedBy?: RateLimitName;
  /** With a tokens-per-minute limit: the tokens the key's calls settled in the last 60 s. */
  settledTokens?: number | undefined;
}

/** A key's own per-minute limits (its controls); null: none. */
export interface KeyRates {
  rpm: number | null;
  tpm: number | null;
}

/** The per-minute limits kept outside this process (Redis), shared by every instance. */
export interface SharedRateLimit {
  /**
   * Takes one request from the key's buckets (`rpm` = KEY_RATE_LIMIT_RPM, 0 = off; `own` its own limits,
   * 0 = none) and checks its settled tokens, in one round trip; `undefined` when the shared state cannot
   * be reached (the local one is used).
   */
  take(keyId: string, rpm: number, own?: { rpm: number; tpm: number }): Promise<RateDecision | undefined>;
  /** Counts a settled call's tokens for the key's tokens-per-minute limit. */
  addTokens(keyId: string, tokens: number): void;
}

/** Keys whose buckets or token counts are kept before idle ones are dropped; bounds memory. */
const MAX_KEYS = 10_000;
const MINUTE_MS = 60_000;

interface Bucket {
  tokens: number;
  updatedAt: number;
  /** Its capacity: requests per minute. */
  rpm: number;
}

/** Requests-per-minute token buckets, one per key: a burst of `rpm`, refilled at rpm/60 per second. */
class Buckets {
  private readonly buckets = new Map<string, Bucket>();

  /** `keyId`'s bucket of `rpm`, refilled up to `now` (a new one is full). */
  refill(keyId: string, rpm: number, now: number): Bucket {
    let bucket = this.buckets.get(keyId);
    if (!bucket) {
      if (this.buckets.size >= MAX_KEYS) this.dropFull(now);
      bucket = { tokens: rpm, updatedAt: now, rpm };
      this.buckets.set(keyId, bucket);
    }
    bucket.tokens = Math.min(rpm, bucket.tokens + ((now - bucket.updatedAt) * rpm) / MINUTE_MS);
    bucket.updatedAt = now;
    bucket.rpm = rpm;
    return bucket;
  }

  private dropFull(now: number): void {
    for (const [key, b] of this.buckets) {
      if (b.tokens + ((now - b.updatedAt) * b.rpm) / MINUTE_MS >= b.rpm) this.buckets.delete(key);
    }
    dropOldest(this.buckets);
  }
}

/** Milliseconds until `bucket` holds one request again (0: it does now). */
function bucketWait(bucket: Bucket): number {
  return bucket.tokens >= 1 ? 0 : ((1 - bucket.tokens) * MINUTE_MS) / bucket.rpm;
}

/** Still full of active keys: forget the oldest rather than grow without bound. */
function dropOldest(map: Map<string, unknown>): void {
  while (map.size >= MAX_KEYS) {
    const oldest = map.keys().next().value;
    if (oldest === undefined) break;
    map.delete(oldest);
  }
}

/** The tokens each key's calls settled, per second of the last minute (oldest first). */
class SettledTokens {
  private readonly seconds = new Map<string, { second: number; tokens: number }[]>();

  add(keyId: string, tokens: number, now: number): void {
    const second = Math.floor(now / 1000);
    let entries = this.seconds.get(keyId);
    if (!entries) {
      if (this.seconds.size >= MAX_KEYS) this.dropIdle(second);
      entries = [];
      this.seconds.set(keyId, entries);
    }
    const last = entries[entries.length - 1];
    if (last !== undefined && last.second === second) last.tokens += tokens;
    else entries.push({ second, tokens });
  }

  /** The tokens settled in the last 60 s (older seconds are dropped). */
  used(keyId: string, now: number): number {
    const entries = this.seconds.get(keyId);
    if (!entries) return 0;
    const second = Math.floor(now / 1000);
    while (entries.length > 0 && (entries[0]?.second ?? 0) <= second - 60) entries.shift();
    let used = 0;
    for (const e of entries) used += e.tokens;
    return used;
  }

  /** Milliseconds until fewer than `tpm` of the `used` tokens are in the window (at least 1). */
  waitUnder(keyId: string, tpm: number, used: number, now: number): number {
    let left = used;
    for (const e of this.seconds.get(keyId) ?? []) {
      left -= e.tokens;
      if (left < tpm) return Math.max(1, (e.second + 60) * 1000 - now);
    }
    return 1;
  }

  private dropIdle(second: number): void {
    for (const [key, entries] of this.seconds) {
      const last = entries[entries.length - 1];
      if (last === undefined || last.second <= second - 60) this.seconds.delete(key);
    }
    dropOldest(this.seconds);
  }
}

/**
 * Per-key limits: requests per minute (`KEY_RATE_LIMIT_RPM`, off until configured, docs/configuration.md)
 * as a token bucket that holds `rpm` tokens and refills at rpm/60 per second; the key's own requests per
 * minute (a bucket likewise) and tokens per minute (what its calls settled in the last 60 s, counted per
 * second), set on the key (docs/api.md "Key controls"); and requests in flight at once. Refusals are 429
 * `rate_limit_exceeded` naming the limit, with the seconds until the next request would be admitted.
 */
export class KeyLimiter {
  private readonly buckets = new Buckets();
  private readonly ownBuckets = new Buckets();
  private readonly settled = new SettledTokens();
  private readonly inFlight = new Map<string, number>();

  constructor(
    private readonly rpm: number,
    private readonly maxConcurrent: number,
    private readonly now: () => number = Date.now,
    private readonly shared?: SharedRateLimit,
  ) {}

  /**
   * Like `admit`, but the requests-per-minute buckets and the settled tokens are the ones shared by every
   * instance while they are reachable. Concurrency stays counted per instance. A key without limits of its
   * own (`own` null in both) pays for one check of them.
   */
  async acquire(keyId: string, own?: KeyRates): Promise<() => void> {
    if (own === undefined || (own.rpm === null && own.tpm === null)) {
      if (this.rpm <= 0 || !this.shared) return this.admit(keyId);
      const decision = await this.shared.take(keyId, this.rpm);
      if (decision === undefined) return this.admit(keyId);
      if (!decision.allowed) throw this.rateLimited(decision, own);
      return this.enter(keyId);
    }
    if (this.shared) {
      const decision = await this.shared.take(keyId, this.rpm, { rpm: own.rpm ?? 0, tpm: own.tpm ?? 0 });
      if (decision !== undefined) {
        if (!decision.allowed) throw this.rateLimited(decision, own);
        return this.enter(keyId);
      }
    }
    return this.admit(keyId, own);
  }

  /** Admits one request of `keyId` (with its own limits, if any) or throws 429; the returned function ends it (idempotent). */
  admit(keyId: string, own?: KeyRates): () => void {
    if (own === undefined || (own.rpm === null && own.tpm === null)) {
      if (this.rpm > 0) this.take(keyId);
    } else {
      this.takeWithOwn(keyId, own);
    }
    return this.enter(keyId);
  }

  /**
   * Counts the tokens a call of `keyId` settled (prompt and completion), for its tokens-per-minute limit:
   * here, and in the shared state when there is one.
   */
  tokensSettled(keyId: string, tokens: number): void {
    if (!(tokens > 0)) return;
    this.settled.add(keyId, tokens, this.now());
    this.shared?.addTokens(keyId, tokens);
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
    const bucket = this.buckets.refill(keyId, this.rpm, this.now());
    if (bucket.tokens < 1) {
      throw this.rateLimited(
        { allowed: false, retryAfterMs: bucketWait(bucket), refusedBy: 'rpm' },
        undefined,
      );
    }
    bucket.tokens -= 1;
  }

  /** Every limit is checked before a bucket is drawn from: a refusal takes nothing. */
  private takeWithOwn(keyId: string, own: KeyRates): void {
    const now = this.now();
    let refusedBy: RateLimitName | undefined;
    let waitMs = 0;
    const global = this.rpm > 0 ? this.buckets.refill(keyId, this.rpm, now) : undefined;
    if (global !== undefined && global.tokens < 1) {
      refusedBy = 'rpm';
      waitMs = bucketWait(global);
    }
    const mine = own.rpm !== null ? this.ownBuckets.refill(keyId, own.rpm, now) : undefined;
    if (mine !== undefined && mine.tokens < 1) {
      refusedBy ??= 'key_rpm';
      waitMs = Math.max(waitMs, bucketWait(mine));
    }
    let settledTokens: number | undefined;
    if (own.tpm !== null) {
      settledTokens = this.settled.used(keyId, now);
      if (settledTokens >= own.tpm) {
        refusedBy ??= 'key_tpm';
        waitMs = Math.max(waitMs, this.settled.waitUnder(keyId, own.tpm, settledTokens, now));
      }
    }
    if (refusedBy !== undefined) {
      throw this.rateLimited({ allowed: false, retryAfterMs: waitMs, refusedBy, settledTokens }, own);
    }
    if (global !== undefined) global.tokens -= 1;
    if (mine !== undefined) mine.tokens -= 1;
  }

  private rateLimited(decision: RateDecision, own: KeyRates | undefined): GatewayError {
    const seconds = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
    let message: string;
    if (decision.refusedBy === 'key_rpm') {
      message = `This API key's own limit of ${own?.rpm} requests per minute is reached; retry in ${seconds} s.`;
    } else if (decision.refusedBy === 'key_tpm') {
      message =
        `This API key's own limit of ${own?.tpm} tokens per minute is reached: its calls settled ` +
        `${decision.settledTokens ?? own?.tpm} tokens in the last 60 s; retry in ${seconds} s.`;
    } else {
      message = `Rate limit of ${this.rpm} requests per minute exceeded for this API key.`;
    }
    return new GatewayError('rate_limit_exceeded', message, { retryAfterSeconds: seconds });
  }
}
