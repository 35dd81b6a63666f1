import { createHash } from 'node:crypto';
import type { AttemptCheck } from '../auth/attempt-limiter.js';
import type { RedisLink } from './redis-link.js';

/** The count of a key and, once it has `ARGV[1]` or more, the milliseconds left in its window. */
const CHECK = `
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n >= tonumber(ARGV[1]) then return {0, redis.call('PTTL', KEYS[1])} end
return {1, 0}
`;
/** One more event; the first of a window starts it (`ARGV[1]` ms). */
const HIT = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n
`;
/** CHECK and, when allowed, HIT, atomically. */
const TAKE = `
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n >= tonumber(ARGV[1]) then return {0, redis.call('PTTL', KEYS[1])} end
n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return {1, 0}
`;

/** Counters of attempts (failed logins, sign-ups) in fixed windows, shared by the instances. */
export interface SharedAttemptStore {
  /** Whether `value` is under `max` events in its window; undefined when Redis does not answer. */
  check(kind: string, value: string, max: number): Promise<AttemptCheck | undefined>;
  /** Counts one event of `value` (nothing happens when Redis does not answer). */
  hit(kind: string, value: string, windowMs: number): Promise<void>;
  /** Forgets `value`'s window. */
  reset(kind: string, value: string): Promise<void>;
  /** `check`, and `hit` when allowed, in one step. */
  take(kind: string, value: string, max: number, windowMs: number): Promise<AttemptCheck | undefined>;
}

/**
 * The login throttle's windows in Redis, so that N instances behind a load balancer allow the same
 * number of guesses as one (https://redis.io/docs/latest/commands/incr/, "Pattern: Rate limiter").
 * Keys hold a SHA-256 of the email or address, never the value itself; they expire with their window.
 * Each call is one script on one key (no multi-key scripts, so a Redis Cluster can serve it).
 */
export class SharedAttempts implements SharedAttemptStore {
  constructor(
    private readonly link: RedisLink,
    private readonly keyPrefix: string,
  ) {}

  async check(kind: string, value: string, max: number): Promise<AttemptCheck | undefined> {
    return decision(await this.link.run((redis) => redis.eval(CHECK, 1, this.key(kind, value), max)));
  }

  async hit(kind: string, value: string, windowMs: number): Promise<void> {
    await this.link.run((redis) => redis.eval(HIT, 1, this.key(kind, value), windowMs));
  }

  async reset(kind: string, value: string): Promise<void> {
    await this.link.run((redis) => redis.del(this.key(kind, value)));
  }

  async take(kind: string, value: string, max: number, windowMs: number): Promise<AttemptCheck | undefined> {
    return decision(
      await this.link.run((redis) => redis.eval(TAKE, 1, this.key(kind, value), max, windowMs)),
    );
  }

  private key(kind: string, value: string): string {
    return `${this.keyPrefix}${kind}:${createHash('sha256').update(value).digest('hex')}`;
  }
}

function decision(reply: unknown): AttemptCheck | undefined {
  if (!Array.isArray(reply) || reply.length !== 2) return undefined;
  const [allowed, ttl] = reply as unknown[];
  if (typeof allowed !== 'number' || typeof ttl !== 'number') return undefined;
  // A window without an expiry cannot come from these scripts; count it as one full window left.
  return allowed === 1 ? { ok: true } : { ok: false, retryAfterMs: ttl > 0 ? ttl : 1_000 };
}
