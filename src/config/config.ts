import type { ProviderConfig, ProviderName } from '../providers/types.js';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/** The one validated, typed, frozen configuration object. Only `src/config/` reads the environment. */
export interface Config {
  readonly port: number;
  readonly host: string;
  readonly databaseUrl: string;
  readonly redisUrl: string | undefined;
  readonly logLevel: LogLevel;
  /** SQLite `synchronous` level in WAL mode (see docs/operations.md). */
  readonly sqliteSynchronous: 'NORMAL' | 'FULL';
  /** Largest request body accepted, in bytes (413 above it). */
  readonly bodyLimitBytes: number;
  /** Most messages accepted in one request. */
  readonly maxMessages: number;
  /** Largest `max_tokens` a caller may ask for. */
  readonly maxTokensCeiling: number;
  /** Overall deadline of one completion request, retries included. */
  readonly requestTimeoutMs: number;
  /** A hold outlives its request's deadline by this much before the sweeper may release it. */
  readonly holdGraceMs: number;
  /** How often expired holds are released. */
  readonly holdSweepIntervalMs: number;
  /** Smallest completion cap worth serving when a low balance cannot cover a provider's default cap. */
  readonly minCompletionTokens: number;
  /** How long a key lookup may be served from the in-process cache (revocation latency bound). */
  readonly keyCacheTtlMs: number;
  /** Most requests in flight in this process before new ones are refused with 503. */
  readonly maxConcurrentRequests: number;
  readonly providers: Readonly<Record<ProviderName, Readonly<ProviderConfig>>>;
}
