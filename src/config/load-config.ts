import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { NANO_PER_USD, parseUsdToNano } from '../money/money.js';
import { CATALOG, envNameOf } from '../providers/catalog.js';
import {
  isProviderName,
  PROVIDER_NAMES,
  type ProviderConfig,
  type ProviderName,
} from '../providers/types.js';
import { type Config, DEFAULT_SQLITE_CACHE_MB, type LogLevel, type ModelAlias } from './config.js';
import { databaseKindOf } from './database-kind.js';
import { unknownSettingWarnings } from './unknown-settings.js';

/** Thrown when configuration is invalid; `problems` names each variable and what is wrong with it. */
export class ConfigError extends Error {
  readonly problems: readonly string[];
  constructor(problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

type Source = Record<string, string | undefined>;

const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/**
 * Flattens an optional JSON config file into the same variable names the environment uses, so one
 * validator serves both. The file may use the variable names directly (`"PORT": 8080`) or a nested
 * `providers` object keyed by provider name:
 * `{"providers": {"prov-claude": {"apiKey": "…", "model": "…", "inputPrice": "3"}}}`.
 */
function readConfigFile(path: string, problems: string[]): { values: Source; keys: string[] } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    problems.push(`TOLLGATE_CONFIG: cannot read ${path} as JSON (${(err as Error).message})`);
    return { values: {}, keys: [] };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    problems.push(`TOLLGATE_CONFIG: ${path} must contain a JSON object`);
    return { values: {}, keys: [] };
  }
  const out: Source = {};
  const providerFields: Record<string, string> = {
    apiKey: 'API_KEY',
    baseUrl: 'BASE_URL',
    model: 'MODEL',
    inputPrice: 'INPUT_PRICE',
    outputPrice: 'OUTPUT_PRICE',
    cacheReadPrice: 'CACHE_READ_PRICE',
    cacheWritePrice: 'CACHE_WRITE_PRICE',
    enabled: 'ENABLED',
    timeoutMs: 'TIMEOUT_MS',
    maxTokens: 'MAX_TOKENS',
    imageTokens: 'IMAGE_TOKENS',
    firstByteTimeoutMs: 'FIRST_BYTE_TIMEOUT_MS',
    streamIdleTimeoutMs: 'STREAM_IDLE_TIMEOUT_MS',
  };
  for (const [key, value] of Object.entries(parsed)) {
    if (key === 'providers' && typeof value === 'object' && value !== null) {
      for (const [provider, fields] of Object.entries(value)) {
        const entry = CATALOG.find((c) => c.name === provider);
        if (!entry) {
          problems.push(`TOLLGATE_CONFIG: unknown provider "${provider}" in ${path}`);
          continue;
        }
        if (typeof fields !== 'object' || fields === null) continue;
        for (const [field, fieldValue] of Object.entries(fields)) {
          const suffix = providerFields[field];
          if (!suffix) {
            problems.push(`TOLLGATE_CONFIG: unknown field "${field}" for ${provider} in ${path}`);
            continue;
          }
          out[`PROV_${envNameOf(entry.name)}_${suffix}`] = String(fieldValue);
        }
      }
    } else if (value !== null && typeof value !== 'object') {
      out[key] = String(value);
    } else {
      problems.push(`TOLLGATE_CONFIG: "${key}" in ${path} must be a string, number or boolean`);
    }
  }
  return { values: out, keys: Object.keys(parsed) };
}

class Reader {
  /** Every name read: the settings there are, for the warnings about those that match none. */
  readonly names = new Set<string>(['TOLLGATE_CONFIG']);

  constructor(
    private readonly source: Source,
    readonly problems: string[],
  ) {}

  raw(name: string): string | undefined {
    this.names.add(name);
    const v = this.source[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  }

  string(name: string, fallback: string): string {
    return this.raw(name) ?? fallback;
  }

  int(name: string, fallback: number, min: number, max: number): number {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    const n = /^\d+$/.test(v) ? Number(v) : Number.NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) {
      this.problems.push(`${name}: must be a whole number from ${min} to ${max} (got "${v}")`);
      return fallback;
    }
    return n;
  }

  bool(name: string, fallback: boolean): boolean {
    const v = this.raw(name)?.toLowerCase();
    if (v === undefined) return fallback;
    if (['1', 'true', 'yes', 'on'].includes(v)) return true;
    if (['0', 'false', 'no', 'off'].includes(v)) return false;
    this.problems.push(`${name}: must be true or false (got "${v}")`);
    return fallback;
  }

  oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    const match = allowed.find((a) => a.toLowerCase() === v.toLowerCase());
    if (!match) {
      this.problems.push(`${name}: must be one of ${allowed.join(', ')} (got "${v}")`);
      return fallback;
    }
    return match;
  }

  price(name: string, fallback: string): number {
    const v = this.raw(name) ?? fallback;
    const nano = parseUsdToNano(v);
    if (nano === undefined) {
      this.problems.push(
        `${name}: must be a price in USD per 1M tokens, a plain decimal with at most 9 decimal places such as 3 or 0.15 (got "${v}")`,
      );
      return 0;
    }
    return nano;
  }

  /**
   * A cache price: the variable when set, else `ratio` (the catalog's published multiple, a decimal) of
   * the input price, rounded up to a whole nanodollar; no ratio: the input price.
   */
  cachePrice(name: string, inputPriceNano: number, ratio: string | undefined): number {
    if (this.raw(name) !== undefined) return this.price(name, '0');
    const scaled = ratio === undefined ? undefined : parseUsdToNano(ratio);
    if (scaled === undefined) return inputPriceNano;
    const nanoPerUnit = BigInt(NANO_PER_USD);
    return Number((BigInt(inputPriceNano) * BigInt(scaled) + nanoPerUnit - 1n) / nanoPerUnit);
  }

  url(name: string, fallback: string): string {
    const v = this.raw(name) ?? fallback;
    try {
      const u = new URL(v);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('not http(s)');
      if (u.username || u.password) {
        this.problems.push(`${name}: must not contain credentials; use the _API_KEY variable`);
      }
      return v.replace(/\/+$/, '');
    } catch {
      this.problems.push(`${name}: must be an http:// or https:// URL (got "${v}")`);
      return fallback;
    }
  }
}

/** An amount of USD (0 unless set), as integer nanodollars. */
function readUsdAmount(r: Reader, name: string): number {
  const v = r.raw(name);
  if (v === undefined) return 0;
  const nano = parseUsdToNano(v);
  if (nano === undefined) {
    r.problems.push(
      `${name}: must be an amount in USD, a plain decimal with at most 9 decimal places such as 0 or 2.50 (got "${v}")`,
    );
    return 0;
  }
  return nano;
}

/** METRICS_TOKEN: long enough not to be guessed, and sendable in a header. Never echoed in a message. */
function readMetricsToken(r: Reader): string | undefined {
  const v = r.raw('METRICS_TOKEN');
  if (v === undefined || /^[\x21-\x7e]{16,512}$/.test(v)) return v;
  const why = /^[\x21-\x7e]*$/.test(v) ? `it has ${v.length}` : 'it has spaces or non-ASCII characters';
  r.problems.push(`METRICS_TOKEN: must be 16 to 512 printable ASCII characters without spaces (${why})`);
  return undefined;
}

/**
 * AUTO_PROVIDERS: the providers `model: "auto"` rotates over, in rotation order (comma-separated provider
 * names); by default the catalog's auto list.
 */
function readAutoProviders(r: Reader): ProviderName[] {
  const fallback = CATALOG.filter((c) => c.inAutoRotation).map((c) => c.name);
  const v = r.raw('AUTO_PROVIDERS');
  if (v === undefined) return fallback;
  const names = v
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '');
  const unknown = names.filter((n) => !isProviderName(n));
  if (names.length === 0 || unknown.length > 0) {
    r.problems.push(
      `AUTO_PROVIDERS: must be a comma-separated list of provider names (${PROVIDER_NAMES.join(', ')})` +
        (unknown.length > 0 ? `; unknown: ${unknown.join(', ')}` : ''),
    );
    return fallback;
  }
  return [...new Set(names as ProviderName[])];
}

/** The default of MODEL_ALIASES: the model names Claude clients send by default go to prov-claude. */
const DEFAULT_MODEL_ALIASES = 'claude-*=prov-claude';

/**
 * MODEL_ALIASES: comma-separated `pattern=provider` pairs the Messages door resolves model names with,
 * first match wins; a pattern is a model name, or a prefix followed by `*`. Empty turns aliases off.
 */
function readModelAliases(r: Reader): ModelAlias[] {
  const v = r.raw('MODEL_ALIASES') ?? DEFAULT_MODEL_ALIASES;
  const aliases: ModelAlias[] = [];
  for (const entry of v.split(',')) {
    const text = entry.trim();
    if (text === '') continue;
    const [pattern, provider, extra] = text.split('=').map((part) => part.trim());
    const star = pattern === undefined ? -1 : pattern.indexOf('*');
    if (
      pattern === undefined ||
      pattern === '' ||
      provider === undefined ||
      extra !== undefined ||
      !isProviderName(provider) ||
      (star !== -1 && star !== pattern.length - 1)
    ) {
      r.problems.push(
        `MODEL_ALIASES: "${text.slice(0, 100)}" must be pattern=provider (a model name or a prefix ending in *, and one of ${PROVIDER_NAMES.join(', ')})`,
      );
      continue;
    }
    aliases.push(Object.freeze({ pattern, provider }));
  }
  return aliases;
}

function readProviders(r: Reader, auto: readonly ProviderName[]): Record<ProviderName, ProviderConfig> {
  const providers = {} as Record<ProviderName, ProviderConfig>;
  for (const entry of CATALOG) {
    const p = `PROV_${envNameOf(entry.name)}_`;
    const inputPriceNano = r.price(`${p}INPUT_PRICE`, entry.inputPriceUsd);
    providers[entry.name] = Object.freeze({
      name: entry.name,
      wireFormat: entry.wireFormat,
      baseUrl: r.url(`${p}BASE_URL`, entry.baseUrl),
      apiKey: r.raw(`${p}API_KEY`),
      model: r.string(`${p}MODEL`, entry.model),
      inputPriceNano,
      outputPriceNano: r.price(`${p}OUTPUT_PRICE`, entry.outputPriceUsd),
      cacheReadPriceNano: r.cachePrice(`${p}CACHE_READ_PRICE`, inputPriceNano, entry.cacheReadRatio),
      cacheWritePriceNano: r.cachePrice(`${p}CACHE_WRITE_PRICE`, inputPriceNano, entry.cacheWriteRatio),
      defaultMaxTokens: r.int(`${p}MAX_TOKENS`, entry.defaultMaxTokens, 1, 1_000_000),
      enabled: r.bool(`${p}ENABLED`, true),
      timeoutMs: r.int(`${p}TIMEOUT_MS`, 60_000, 100, 3_600_000),
      connectTimeoutMs: r.int(`${p}CONNECT_TIMEOUT_MS`, 5_000, 50, 600_000),
      firstByteTimeoutMs: r.int(`${p}FIRST_BYTE_TIMEOUT_MS`, 60_000, 100, 3_600_000),
      streamIdleTimeoutMs: r.int(`${p}STREAM_IDLE_TIMEOUT_MS`, 30_000, 100, 3_600_000),
      inAutoRotation: auto.includes(entry.name),
      imageTokens: r.int(`${p}IMAGE_TOKENS`, entry.imageTokens, 1, 1_000_000),
    });
  }
  return providers;
}

/** PUBLIC_URL: an origin (scheme://host[:port]) without path, query or credentials. */
function readPublicUrl(r: Reader): string | undefined {
  const v = r.raw('PUBLIC_URL');
  if (v === undefined) return undefined;
  try {
    const u = new URL(v);
    if ((u.protocol === 'http:' || u.protocol === 'https:') && !u.username && !u.password && !u.search) {
      if (u.pathname === '/' || u.pathname === '') return u.origin;
    }
  } catch {
    // reported below
  }
  r.problems.push(
    `PUBLIC_URL: must be an http(s) origin such as https://llm.example.com, without a path (got "${v}")`,
  );
  return undefined;
}

/** A URL as it may be shown in a message: `scheme://user:***@host…`. */
function withoutPassword(url: string): string {
  return url.replace(/(\/\/[^:/@]*:)[^@]*@/, '$1***@');
}

/** REDIS_KEY_PREFIX: printable ASCII without spaces, so it is safe in keys and channel names. */
function readRedisKeyPrefix(r: Reader): string {
  const v = r.string('REDIS_KEY_PREFIX', 'tollgate:');
  if (/^[\x21-\x7e]{1,64}$/.test(v)) return v;
  r.problems.push(`REDIS_KEY_PREFIX: must be 1 to 64 printable ASCII characters without spaces (got "${v}")`);
  return 'tollgate:';
}

export interface LoadConfigOptions {
  overrides?: Source;
  defaults?: Source;
}

/**
 * Reads configuration from the environment (and the JSON file named by `TOLLGATE_CONFIG`, whose values
 * the environment overrides), validates all of it, and returns one frozen `Config`. Throws
 * `ConfigError` listing every problem at once. `defaults` sit under the file and the environment;
 * `overrides` above them (the demo uses both to point every provider at the simulator).
 */
/**
 * Whether the environment sets `name` (not empty): for the CLI to say which settings a command ignores or
 * took by default, without reading `process.env` itself.
 */
export function isSetInEnvironment(name: 'DATABASE_URL' | 'REDIS_URL', env: Source = process.env): boolean {
  return Boolean(env[name]?.trim());
}

export function loadConfig(env: Source = process.env, options: LoadConfigOptions = {}): Config {
  return readConfig(env, options).config;
}

/**
 * `loadConfig`, with the warnings a server logs at start: one per `PROV_…` variable or config-file key
 * that matches no setting, with the nearest name (./unknown-settings.ts). They never stop the start.
 */
export function readConfig(
  env: Source = process.env,
  options: LoadConfigOptions = {},
): { config: Config; warnings: string[] } {
  const problems: string[] = [];
  const filePath = env.TOLLGATE_CONFIG?.trim();
  const file = filePath ? readConfigFile(filePath, problems) : undefined;
  const r = new Reader({ ...options.defaults, ...file?.values, ...env, ...options.overrides }, problems);

  const databaseUrl = r.string('DATABASE_URL', 'sqlite:./data/tollgate.db');
  if (databaseKindOf(databaseUrl) === undefined) {
    problems.push(
      `DATABASE_URL: must start with sqlite: or postgres:// (got "${withoutPassword(databaseUrl)}")`,
    );
  }
  const redisUrl = r.raw('REDIS_URL');
  if (redisUrl !== undefined && !/^rediss?:\/\//.test(redisUrl)) {
    problems.push(`REDIS_URL: must start with redis:// or rediss:// (got "${withoutPassword(redisUrl)}")`);
  }
  const requestTimeoutMs = r.int('REQUEST_TIMEOUT_MS', 120_000, 1_000, 3_600_000);
  const maxConcurrentRequests = r.int('MAX_CONCURRENT_REQUESTS', 4096, 1, 1_000_000);
  const autoProviders = readAutoProviders(r);

  const config: Config = {
    port: r.int('PORT', 8080, 0, 65_535),
    host: r.string('HOST', '0.0.0.0'),
    databaseUrl,
    redisUrl,
    databasePoolMax: r.int('DATABASE_POOL_MAX', 10, 1, 1_000),
    databaseStatementTimeoutMs: r.int('DATABASE_STATEMENT_TIMEOUT_MS', 5_000, 100, 3_600_000),
    databaseConnectTimeoutMs: r.int('DATABASE_CONNECT_TIMEOUT_MS', 3_000, 100, 600_000),
    databasePreparedStatements: r.bool('DATABASE_PREPARED_STATEMENTS', true),
    redisKeyPrefix: readRedisKeyPrefix(r),
    redisTimeoutMs: r.int('REDIS_TIMEOUT_MS', 50, 1, 60_000),
    logLevel: r.oneOf('LOG_LEVEL', LOG_LEVELS, 'info'),
    sqliteSynchronous: r.oneOf('SQLITE_SYNCHRONOUS', ['NORMAL', 'FULL'] as const, 'NORMAL'),
    sqliteCacheMb: r.int('SQLITE_CACHE_MB', DEFAULT_SQLITE_CACHE_MB, 1, 65_536),
    sqliteCheckpoint: r.oneOf('SQLITE_CHECKPOINT', ['inline', 'background'] as const, 'background'),
    tokenizerPreload: r.bool('TOKENIZER_PRELOAD', false),
    tokenCountTimeoutMs: r.int('TOKEN_COUNT_TIMEOUT_MS', 2_000, 10, 600_000),
    // Each thread loads its own copy of the tokenizer's tables, so one unless asked, and never more than
    // the machine can run at once.
    tokenCountThreads: Math.min(r.int('TOKEN_COUNT_THREADS', 1, 1, 256), availableParallelism()),
    bodyLimitBytes: r.int('BODY_LIMIT_BYTES', 4 * 1024 * 1024, 1024, 256 * 1024 * 1024),
    maxMessages: r.int('MAX_MESSAGES', 1000, 1, 100_000),
    maxTokensCeiling: r.int('MAX_TOKENS_CEILING', 200_000, 1, 10_000_000),
    requestTimeoutMs,
    streaming: r.bool('STREAMING', false),
    streamTimeoutMs: r.int('STREAM_TIMEOUT_MS', 600_000, 1_000, 24 * 3_600_000),
    streamStallTimeoutMs: r.int('STREAM_STALL_TIMEOUT_MS', 30_000, 100, 3_600_000),
    holdGraceMs: r.int('HOLD_GRACE_MS', 60_000, 0, 86_400_000),
    holdSweepIntervalMs: r.int('HOLD_SWEEP_INTERVAL_MS', 30_000, 100, 3_600_000),
    instanceTimeoutMs: r.int('INSTANCE_TIMEOUT_MS', 30_000, 600, 3_600_000),
    minCompletionTokens: r.int('MIN_COMPLETION_TOKENS', 16, 1, 1_000_000),
    keyCacheTtlMs: r.int('KEY_CACHE_TTL_MS', 1000, 0, 1000),
    maxConcurrentRequests,
    keyRateLimitRpm: r.int('KEY_RATE_LIMIT_RPM', 0, 0, 10_000_000),
    // Unset, one key may hold half the process's slots: never all of them, whatever it sends.
    keyMaxConcurrent: r.int(
      'KEY_MAX_CONCURRENT',
      Math.max(1, Math.floor(maxConcurrentRequests / 2)),
      0,
      1_000_000,
    ),
    headersTimeoutMs: r.int('HEADERS_TIMEOUT_MS', 10_000, 100, 600_000),
    bodyTimeoutMs: r.int('BODY_TIMEOUT_MS', 60_000, 100, 3_600_000),
    keepAliveTimeoutMs: r.int('KEEP_ALIVE_TIMEOUT_MS', 72_000, 100, 3_600_000),
    keyMaxPendingBodies: r.int('KEY_MAX_PENDING_BODIES', 64, 0, 1_000_000),
    addressMaxPendingBodies: r.int('ADDRESS_MAX_PENDING_BODIES', 256, 0, 1_000_000),
    circuit: Object.freeze({
      windowMs: r.int('CIRCUIT_WINDOW_MS', 30_000, 1_000, 3_600_000),
      minRequests: r.int('CIRCUIT_MIN_REQUESTS', 5, 1, 10_000),
      failureRate: r.int('CIRCUIT_FAILURE_PERCENT', 50, 1, 100) / 100,
      coolDownMs: r.int('CIRCUIT_COOLDOWN_MS', 15_000, 100, 3_600_000),
    }),
    shutdownDrainMs: r.int('SHUTDOWN_DRAIN_MS', 30_000, 0, 3_600_000),
    metricsEnabled: r.bool('METRICS_ENABLED', true),
    metricsToken: readMetricsToken(r),
    providers: Object.freeze(readProviders(r, autoProviders)),
    autoProviders: Object.freeze(autoProviders),
    modelAliases: Object.freeze(readModelAliases(r)),
    signup: r.oneOf('SIGNUP', ['open', 'invite', 'closed'] as const, 'invite'),
    trustProxy: r.bool('TRUST_PROXY', false),
    publicUrl: readPublicUrl(r),
    sessionIdleTimeoutMs: r.int('SESSION_IDLE_TIMEOUT_MS', 2 * 3_600_000, 60_000, 30 * 86_400_000),
    sessionMaxAgeMs: r.int('SESSION_MAX_AGE_MS', 86_400_000, 60_000, 90 * 86_400_000),
    ledgerShortfallAllowanceNano: readUsdAmount(r, 'LEDGER_SHORTFALL_ALLOWANCE_USD'),
    dashboardReportTimeoutMs: r.int('DASHBOARD_REPORT_TIMEOUT_MS', 5_000, 100, 600_000),
  };
  if (config.headersTimeoutMs > config.bodyTimeoutMs) {
    problems.push(
      'HEADERS_TIMEOUT_MS: must not be longer than BODY_TIMEOUT_MS (which counts the headers too)',
    );
  }
  if (config.sessionIdleTimeoutMs > config.sessionMaxAgeMs) {
    problems.push('SESSION_IDLE_TIMEOUT_MS: must not be longer than SESSION_MAX_AGE_MS');
  }
  if (problems.length > 0) throw new ConfigError(problems);
  const warnings = unknownSettingWarnings({
    known: r.names,
    envNames: Object.keys(env).filter((name) => env[name] !== undefined),
    ...(filePath && file ? { file: { path: filePath, keys: file.keys } } : {}),
  });
  return { config: Object.freeze(config), warnings };
}
