import { Redis, type RedisOptions } from 'ioredis';
import type { Logger } from 'pino';
import { redactUrlPassword } from '../redact-url.js';

export interface RedisLinkOptions {
  url: string;
  /** Longest one command may take before the caller goes on without Redis. */
  timeoutMs: number;
  logger: Logger;
  /** Shown in Redis's CLIENT LIST. */
  name: string;
  /**
   * Whether going down and coming back are logged (default true). A second connection to the same Redis
   * leaves that to the first, so an outage is one line per instance.
   */
  logsOutages?: boolean;
}

/** After a command times out, Redis is left alone this long: a hung server costs one timeout, not one per request. */
const BACK_OFF_MS = 1_000;

/**
 * The connection to Redis (https://github.com/redis/ioredis). Redis makes instances share state faster;
 * it is never needed to serve a request, and money never lives there. So a command is only sent while
 * the connection is up (no offline queue), each waits at most `timeoutMs`, every failure is answered
 * with `undefined` (the caller then uses its local state), and reconnection runs in the background.
 * Losing and regaining Redis is logged once each, not once per request.
 */
export class RedisLink {
  readonly client: Redis;
  private skipUntil = 0;
  /** For logging transitions once: `down` after a failure, `up` again after a success. */
  private state: 'connecting' | 'up' | 'down' | 'closed' = 'connecting';
  /**
   * Commands that timed out in a row. One alone is no outage: under load the event loop can run the
   * command's timer before the read of an answer that had already arrived (timers come before I/O in a
   * turn), and the test of a real outage saw exactly that — "unavailable", "restored" a second later, then
   * the outage. Redis is left alone for the back-off either way; it is called unavailable (and logged)
   * when the next command after the back-off times out too, or on any other failure.
   */
  private timeoutsInARow = 0;

  constructor(private readonly options: RedisLinkOptions) {
    this.client = new Redis(options.url, this.connectionOptions({ enableOfflineQueue: false }));
    this.client.on('ready', () => {
      this.skipUntil = 0;
      this.markUp();
    });
    this.client.on('error', (err: Error) => this.markDown(err));
    this.client.on('end', () => this.markDown(new Error('connection ended')));
  }

  /** Options of every connection to this Redis: fail fast, reconnect forever in the background. */
  connectionOptions(extra: RedisOptions = {}): RedisOptions {
    return {
      connectionName: this.options.name,
      commandTimeout: this.options.timeoutMs,
      connectTimeout: 2_000,
      maxRetriesPerRequest: 0,
      retryStrategy: (attempt) => Math.min(100 * attempt, 2_000),
      ...extra,
    };
  }

  /** Waits up to `ms` for the first connection (start-up); false when Redis did not answer by then. */
  async ready(ms: number): Promise<boolean> {
    if (this.client.status === 'ready') return true;
    return new Promise((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(timer);
        this.client.off('ready', onReady);
        resolve(ok);
      };
      const onReady = () => done(true);
      const timer = setTimeout(() => done(false), ms);
      this.client.on('ready', onReady);
    });
  }

  /** Whether a command would be sent now. */
  usable(): boolean {
    return this.client.status === 'ready' && Date.now() >= this.skipUntil;
  }

  /** Runs `fn` against Redis, or answers `undefined` at once when Redis is not usable or the command fails. */
  async run<T>(fn: (redis: Redis) => Promise<T>): Promise<T | undefined> {
    if (!this.usable()) return undefined;
    try {
      const result = await fn(this.client);
      this.timeoutsInARow = 0;
      // A reply that was already on its way when the connection dropped says nothing about Redis now:
      // only a success on a live connection ends an outage (after a run of timeouts, say).
      if (this.client.status === 'ready') this.markUp();
      return result;
    } catch (err) {
      if (err instanceof Error && /timed out/i.test(err.message)) {
        this.skipUntil = Date.now() + BACK_OFF_MS;
        this.timeoutsInARow += 1;
        if (this.timeoutsInARow < 2) return undefined;
      }
      this.markDown(err);
      return undefined;
    }
  }

  async close(): Promise<void> {
    this.state = 'closed';
    this.client.disconnect();
  }

  private markUp(): void {
    if (this.state === 'down' && this.options.logsOutages !== false) {
      this.options.logger.warn('Redis connection restored: state is shared again');
    }
    if (this.state !== 'closed') this.state = 'up';
  }

  private markDown(err: unknown): void {
    if (this.state === 'down' || this.state === 'closed') return;
    this.state = 'down';
    if (this.options.logsOutages === false) return;
    this.options.logger.warn(
      {
        redis: redactUrlPassword(this.options.url),
        reason: err instanceof Error ? err.message : String(err),
      },
      'Redis unavailable: each instance uses its own state until it is back (money is unaffected)',
    );
  }
}
