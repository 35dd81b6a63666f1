import type { ProviderConfig, ProviderName } from '../providers/types.js';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface CircuitConfig {
  /** Outcomes older than this are forgotten. */
  windowMs: number;
  /** Fewest outcomes in the window before the failure rate can open the circuit. */
  minRequests: number;
  /** Failure rate (0–1] at or above which the circuit opens. */
  failureRate: number;
  /** How long an open circuit sheds traffic before one probe is let through. */
  coolDownMs: number;
}

/** One `MODEL_ALIASES` entry: model names matching `pattern` (exact, or a prefix before `*`) go to `provider`. */
export interface ModelAlias {
  readonly pattern: string;
  readonly provider: ProviderName;
}

/** Who may create a dashboard account: anyone, holders of an admin's invite code, or nobody. */
export type SignupMode = 'open' | 'invite' | 'closed';

/** The one validated, typed, frozen configuration object. Only `src/config/` reads the environment. */
export interface Config {
  readonly port: number;
  readonly host: string;
  readonly databaseUrl: string;
  readonly redisUrl: string | undefined;
  /** Most PostgreSQL connections one process opens. */
  readonly databasePoolMax: number;
  /** PostgreSQL `statement_timeout` of every connection (a statement running longer is cancelled). */
  readonly databaseStatementTimeoutMs: number;
  /** Longest wait to open a PostgreSQL connection or get a free one from the pool. */
  readonly databaseConnectTimeoutMs: number;
  /** PostgreSQL: run the per-call statements as named prepared statements (parsed once per connection). */
  readonly databasePreparedStatements: boolean;
  /** Prefix of every Redis key and channel, so several deployments can share one Redis. */
  readonly redisKeyPrefix: string;
  /** Longest a request waits on one Redis command before going on without it. */
  readonly redisTimeoutMs: number;
  readonly logLevel: LogLevel;
  /** SQLite `synchronous` level in WAL mode (see docs/operations.md). */
  readonly sqliteSynchronous: 'NORMAL' | 'FULL';
  /** Most memory SQLite's page cache of the serving connection may hold, in MiB (docs/configuration.md). */
  readonly sqliteCacheMb: number;
  /**
   * Where the SQLite WAL is checkpointed: `inline` (SQLite's default, inside the commit that crosses
   * 1,000 WAL pages) or `background` (a worker thread every 250 ms; see docs/performance.md).
   */
  readonly sqliteCheckpoint: 'inline' | 'background';
  /** Load the fallback tokenizer at start instead of on the first usage-less upstream answer. */
  readonly tokenizerPreload: boolean;
  /** Longest the fallback tokenizer may count one answer before UTF-8 byte counts stand in. */
  readonly tokenCountTimeoutMs: number;
  /** Most worker threads counting tokens at once: TOKEN_COUNT_THREADS, at most the machine's CPUs. */
  readonly tokenCountThreads: number;
  /** Largest request body accepted, in bytes (413 above it). */
  readonly bodyLimitBytes: number;
  /** Most messages accepted in one request. */
  readonly maxMessages: number;
  /** Largest `max_tokens` a caller may ask for. */
  readonly maxTokensCeiling: number;
  /** Overall deadline of one completion request, retries included. */
  readonly requestTimeoutMs: number;
  /** `STREAMING=on`: `stream: true` is served as server-sent events; off, it is refused (400). */
  readonly streaming: boolean;
  /** Longest a streamed answer may run, first byte to last (its hold lasts this long, plus the grace). */
  readonly streamTimeoutMs: number;
  /**
   * Longest a streamed answer waits for its client to take what was written (the socket to drain); past
   * it the connection is closed and the call settled as if the client had left.
   */
  readonly streamStallTimeoutMs: number;
  /** A hold outlives its request's deadline by this much before the sweeper may release it. */
  readonly holdGraceMs: number;
  /** How often expired holds (and, on PostgreSQL, those of instances gone silent) are released. */
  readonly holdSweepIntervalMs: number;
  /**
   * PostgreSQL: an instance silent this long is taken for gone and its holds are released; each instance
   * says it is alive every sixth of it.
   */
  readonly instanceTimeoutMs: number;
  /** Smallest completion cap worth serving when a low balance cannot cover a provider's default cap. */
  readonly minCompletionTokens: number;
  /** How long a key lookup may be served from the in-process cache (revocation latency bound). */
  readonly keyCacheTtlMs: number;
  /** Most requests in flight in this process before new ones are refused with 503. */
  readonly maxConcurrentRequests: number;
  /** Requests per minute one API key may start; 0 = no limit. */
  readonly keyRateLimitRpm: number;
  /**
   * Requests one API key may have in flight at once (per process); 0 = no limit. Unset, half of
   * `maxConcurrentRequests` (at least 1), so that one key cannot take every slot.
   */
  readonly keyMaxConcurrent: number;
  /** Longest time from a request's first byte to the end of its headers; the connection is closed past it. */
  readonly headersTimeoutMs: number;
  /** Longest time from a request's first byte to the end of its body; the connection is closed past it. */
  readonly bodyTimeoutMs: number;
  /** How long an idle keep-alive connection is kept open between two requests. */
  readonly keepAliveTimeoutMs: number;
  /** Request bodies one API key may have arriving at once (429 past it); 0 = no limit. */
  readonly keyMaxPendingBodies: number;
  /** Request bodies one client address may have arriving at once (429 past it); 0 = no limit. */
  readonly addressMaxPendingBodies: number;
  /** Circuit breaker per provider (see docs/operations.md). */
  readonly circuit: Readonly<CircuitConfig>;
  /** On SIGTERM, how long in-flight requests may take to finish before connections are cut. */
  readonly shutdownDrainMs: number;
  /** Serve Prometheus metrics at `GET /metrics`. */
  readonly metricsEnabled: boolean;
  /** When set, `GET /metrics` requires `Authorization: Bearer <token>`; unset = open. */
  readonly metricsToken: string | undefined;
  readonly providers: Readonly<Record<ProviderName, Readonly<ProviderConfig>>>;
  /** The providers `model: "auto"` rotates over, in rotation order (`AUTO_PROVIDERS`). */
  readonly autoProviders: readonly ProviderName[];
  /**
   * Model names the Messages door maps to a provider (`MODEL_ALIASES`), first match wins: a pattern is a
   * name, or a prefix ending in `*`.
   */
  readonly modelAliases: readonly ModelAlias[];
  /** Dashboard sign-up mode (docs/dashboard.md). */
  readonly signup: SignupMode;
  /** Trust one reverse proxy's X-Forwarded-Proto / X-Forwarded-For / X-Forwarded-Host. */
  readonly trustProxy: boolean;
  /** The public base URL (scheme://host[:port]) when behind a proxy; the dashboard's expected Origin. */
  readonly publicUrl: string | undefined;
  /** A dashboard session unused this long ends. */
  readonly sessionIdleTimeoutMs: number;
  /** A dashboard session ends this long after its login, used or not. */
  readonly sessionMaxAgeMs: number;
  /**
   * Unbilled service (shortfalls) an account may have before `ledger check` fails, in nanodollars
   * (`LEDGER_SHORTFALL_ALLOWANCE_USD`; 0: any shortfall fails it; docs/operations.md).
   */
  readonly ledgerShortfallAllowanceNano: number;
  /** How long one dashboard report may take, its wait for a turn included (docs/dashboard.md). */
  readonly dashboardReportTimeoutMs: number;
}

/**
 * The page cache of the serving connection, in MiB. better-sqlite3 builds SQLite with a 16 MB default
 * (`SQLITE_DEFAULT_CACHE_SIZE=-16000`; SQLite's own is 2 MB), and under steady writes the cache fills to
 * it with pages written once and never read again — the usage rows (and, before migration 0007, the
 * ledger's charge rows) and their index leaves — most of what the server's memory grew by under load
 * (docs/performance.md, "SQLite page cache: 4 MiB"). The hot path reads only the pages of the accounts in
 * use and the rightmost leaves it writes to;
 * a page not cached is read back from the WAL or the database file, through the operating system's
 * cache.
 */
export const DEFAULT_SQLITE_CACHE_MB = 4;
