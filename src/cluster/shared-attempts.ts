import { createHash } from 'node:crypto';
import type { AttemptCheck } from '../auth/attempt-limiter.js';
import type { SharedAttemptStore } from '../auth/login-throttle.js';
import type { RedisLink } from './redis-link.js';

/**
 * Counts one event unless the key already has `ARGV[1]`, in one step: Redis runs a script alone, so
 * however many instances take at once, at most `ARGV[1]` are admitted per window. The first event of a
 * window starts it (`ARGV[2]` ms). Answers {1, 0} when counted, {0, ms left} when refused.
 */
const TAKE = `
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n >= tonumber(ARGV[1]) then return {0, redis.call('PTTL', KEYS[1])} end
n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return {1, 0}
`;
/** Takes back one counted event; never below zero, never creates a key, keeps the window's expiry. */
const UNDO = `
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n > 0 then return redis.call('DECR', KEYS[1]) end
return 0
`;

/**
 * The longest a login or sign-up waits on one of these scripts (or `REDIS_TIMEOUT_MS`, if longer). Not the
 * requests' short Redis timeout: an unanswered take leaves each instance with its own count only, and a
 * burst of logins keeps the event loop busy long enough for a short timer to fire before the answer is
 * read, so a burst alone would turn N instances' shared limit into N limits. A login spends longer than
 * this wait's usual cost in Argon2 anyway; a hung Redis costs one wait, then its back-off.
 */
export const ATTEMPTS_TIMEOUT_MS = 1_000;

/**
 * The login throttle's windows in Redis, so that N instances behind a load balancer allow the same
 * number of guesses as one (https://redis.io/docs/latest/commands/incr/, "Pattern: Rate limiter").
 * Keys hold a SHA-256 of the email or address, never the value itself; they expire with their window.
 * Each call is one script on one key (no multi-key scripts, so a Redis Cluster can serve it). `link` is
 * a connection of the throttle's own, with `ATTEMPTS_TIMEOUT_MS` (see `connectCluster`).
 */
export class SharedAttempts implements SharedAttemptStore {
  constructor(
    private readonly link: RedisLink,
    private readonly keyPrefix: string,
  ) {}

  async take(kind: string, value: string, max: number, windowMs: number): Promise<AttemptCheck | undefined> {
    return decision(
      await this.link.run((redis) => redis.eval(TAKE, 1, this.key(kind, value), max, windowMs)),
    );
  }

  async undo(kind: string, value: string): Promise<void> {
    await this.link.run((redis) => redis.eval(UNDO, 1, this.key(kind, value)));
  }

  async reset(kind: string, value: string): Promise<void> {
    await this.link.run((redis) => redis.del(this.key(kind, value)));
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
