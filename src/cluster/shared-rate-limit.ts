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

export interface RateDecision {
  allowed: boolean;
  /** When refused: milliseconds until one request would be admitted. */
  retryAfterMs: number;
}

export class SharedRateLimit {
  constructor(
    private readonly link: RedisLink,
    private readonly keyPrefix: string,
  ) {}

  /** Takes one request from `keyId`'s bucket; `undefined` when Redis is not reachable (use the local bucket). */
  async take(keyId: string, rpm: number): Promise<RateDecision | undefined> {
    const reply = await this.link.run((redis) =>
      redis.eval(TOKEN_BUCKET, 1, `${this.keyPrefix}${keyId}`, rpm),
    );
    if (!Array.isArray(reply) || reply.length !== 2) return undefined;
    const [allowed, wait] = reply as unknown[];
    if (typeof allowed !== 'number' || typeof wait !== 'number') return undefined;
    return { allowed: allowed === 1, retryAfterMs: wait };
  }
}
