import type { RedisLink } from './redis-link.js';

/**
 * The per-key token bucket of `KEY_RATE_LIMIT_RPM` (a burst of `rpm`, refilled at rpm/60 per second),
 * kept in Redis so every instance draws from the same bucket. One script call reads, refills and takes
 * atomically (https://redis.io/docs/latest/develop/interact/programmability/eval-intro/); time comes from
 * the Redis server, so the instances' clocks do not matter. Returns {allowed, wait ms}.
 */
const TOKEN_BUCKET = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local capacity = tonumber(ARGV[1])
local perMs = capacity / 60000
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or capacity
local at = tonumber(state[2]) or now
tokens = math.min(capacity, tokens + math.max(0, now - at) * perMs)
local allowed = 0
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
else
  wait = math.ceil((1 - tokens) / perMs)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], 60000)
return {allowed, wait}
`;

/**
 * The admission of a key with limits of its own, in one script call: the bucket of `KEY_RATE_LIMIT_RPM`
 * (KEYS[1], ARGV[1]; 0 = off), the key's own requests-per-minute bucket (KEYS[2], ARGV[2]) and the tokens
 * its calls settled in the last 60 s (KEYS[3], a hash of Unix second → tokens, ARGV[3] = its
 * tokens-per-minute). Every limit is checked before any bucket is drawn from, so a refusal takes
 * nothing. Returns {refused (0, or 1 / 2 / 3 for the first limit passed), wait ms until all three admit,
 * tokens settled in the last 60 s}.
 */
const KEY_LIMITS = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local refused = 0
local wait = 0
local function refill(key, capacity)
  local state = redis.call('HMGET', key, 'tokens', 'at')
  local tokens = tonumber(state[1]) or capacity
  local at = tonumber(state[2]) or now
  return math.min(capacity, tokens + math.max(0, now - at) * capacity / 60000)
end
local levels = {}
for i = 1, 2 do
  local capacity = tonumber(ARGV[i])
  if capacity > 0 then
    levels[i] = refill(KEYS[i], capacity)
    if levels[i] < 1 then
      if refused == 0 then refused = i end
      wait = math.max(wait, math.ceil((1 - levels[i]) * 60000 / capacity))
    end
  end
end
local tpm = tonumber(ARGV[3])
local used = 0
if tpm > 0 then
  local second = math.floor(now / 1000)
  local fields = redis.call('HGETALL', KEYS[3])
  local live = {}
  for i = 1, #fields, 2 do
    local at = tonumber(fields[i])
    if at > second - 60 then
      local n = tonumber(fields[i + 1])
      used = used + n
      live[#live + 1] = {at, n}
    else
      redis.call('HDEL', KEYS[3], fields[i])
    end
  end
  if used >= tpm then
    if refused == 0 then refused = 3 end
    table.sort(live, function(a, b) return a[1] < b[1] end)
    local left = used
    for _, entry in ipairs(live) do
      left = left - entry[2]
      if left < tpm then
        wait = math.max(wait, (entry[1] + 60) * 1000 - now)
        break
      end
    end
  end
end
if refused == 0 then
  for i = 1, 2 do
    if levels[i] then
      redis.call('HSET', KEYS[i], 'tokens', tostring(levels[i] - 1), 'at', tostring(now))
      redis.call('PEXPIRE', KEYS[i], 60000)
    end
  end
end
return {refused, wait, used}
`;

/** Adds a settled call's tokens to the second it settled in (Redis's clock); kept a little over a minute. */
const ADD_TOKENS = `
local t = redis.call('TIME')
redis.call('HINCRBY', KEYS[1], t[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], 61000)
return 1
`;

/** Which limit refused a request: `KEY_RATE_LIMIT_RPM`, or the key's own requests or tokens per minute. */
export type RateLimitName = 'rpm' | 'key_rpm' | 'key_tpm';

export interface RateDecision {
  allowed: boolean;
  /** When refused: milliseconds until one request would be admitted. */
  retryAfterMs: number;
  /** When refused: the limit passed (the first one, when several are). */
  refusedBy?: RateLimitName;
  /** With a tokens-per-minute limit: the tokens the key's calls settled in the last 60 s. */
  settledTokens?: number;
}

/** A key's own per-minute limits; 0 = none. */
export interface OwnRates {
  rpm: number;
  tpm: number;
}

const REFUSED_BY: readonly (RateLimitName | undefined)[] = [undefined, 'rpm', 'key_rpm', 'key_tpm'];

export class SharedRateLimit {
  constructor(
    private readonly link: RedisLink,
    private readonly keyPrefix: string,
  ) {}

  /**
   * Takes one request from `keyId`'s buckets — `KEY_RATE_LIMIT_RPM`'s (`rpm`, 0 = off) and, when given,
   * the key's own — and checks its tokens of the last minute, in one round trip; `undefined` when Redis is
   * not reachable (use the local state).
   */
  async take(keyId: string, rpm: number, own?: OwnRates): Promise<RateDecision | undefined> {
    if (own === undefined) {
      const reply = await this.link.run((redis) =>
        redis.eval(TOKEN_BUCKET, 1, `${this.keyPrefix}${keyId}`, rpm),
      );
      if (!Array.isArray(reply) || reply.length !== 2) return undefined;
      const [allowed, wait] = reply as unknown[];
      if (typeof allowed !== 'number' || typeof wait !== 'number') return undefined;
      return allowed === 1
        ? { allowed: true, retryAfterMs: 0 }
        : { allowed: false, retryAfterMs: wait, refusedBy: 'rpm' };
    }
    const reply = await this.link.run((redis) =>
      redis.eval(
        KEY_LIMITS,
        3,
        `${this.keyPrefix}${keyId}`,
        `${this.keyPrefix}own:${keyId}`,
        `${this.keyPrefix}tokens:${keyId}`,
        rpm,
        own.rpm,
        own.tpm,
      ),
    );
    if (!Array.isArray(reply) || reply.length !== 3) return undefined;
    const [refused, wait, used] = reply as unknown[];
    if (typeof refused !== 'number' || typeof wait !== 'number' || typeof used !== 'number') return undefined;
    const refusedBy = REFUSED_BY[refused];
    const decision: RateDecision = { allowed: refusedBy === undefined, retryAfterMs: wait };
    if (refusedBy !== undefined) decision.refusedBy = refusedBy;
    if (own.tpm > 0) decision.settledTokens = used;
    return decision;
  }

  /** Counts a settled call's tokens for the key's tokens-per-minute limit (fire and forget). */
  addTokens(keyId: string, tokens: number): void {
    void this.link.run((redis) => redis.eval(ADD_TOKENS, 1, `${this.keyPrefix}tokens:${keyId}`, tokens));
  }
}
