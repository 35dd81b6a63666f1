import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { buildOpenApi } from '../../src/api/openapi.js';
import { createKey } from '../../src/auth/keys.js';
import { type Config, loadConfig } from '../../src/config/index.js';
import { createServer, type Server } from '../../src/http/server.js';
import { parseUsdToNano } from '../../src/money/money.js';
import { CATALOG, envNameOf } from '../../src/providers/catalog.js';
import type { ProviderName } from '../../src/providers/types.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { VERSION } from '../../src/version.js';
import { type Conformance, watchConformance } from './openapi-conformance.js';
import {
  createTestDatabase,
  TEST_REDIS_URL,
  TEST_USES_REDIS,
  type TestDatabase,
  testRedisPrefix,
} from './test-database.js';

export interface Harness {
  server: Server;
  sim: Simulator;
  config: Config;
  /** Every /api/v1 response this harness's server sent, checked against its OpenAPI document. */
  conformance: Conformance;
  dir: string;
  /** The database under test (SQLite file, or a fresh PostgreSQL schema with TEST_DATABASE=postgres). */
  db: TestDatabase;
  accountId: string;
  key: string;
  /** Simulator slug of a provider (`prov-qwen` → `qwen`). */
  slug(provider: ProviderName): string;
  /** POST /api/v1/chat/completions in-process with the harness key (or `headers` given). */
  chat(
    body: unknown,
    options?: { key?: string | null; headers?: Record<string, string>; raw?: string },
  ): Promise<{ status: number; body: Record<string, unknown>; headers: Record<string, unknown> }>;
  /** A new account with `usd` of credit and one key. */
  newAccount(usd: string): Promise<{ accountId: string; key: string }>;
  balanceNano(accountId?: string): Promise<number>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  /** Extra configuration variables (e.g. `PROV_CLAUDE_ENABLED: 'false'`). */
  env?: Record<string, string>;
  /** Providers to leave unconfigured (no API key). */
  unconfigured?: ProviderName[];
  credit?: string;
  simLatencyMs?: number;
}

export function slugOf(provider: ProviderName): string {
  return provider.replace(/^prov-/, '');
}

export interface TestBackends {
  dir: string;
  db: TestDatabase;
  sim: Simulator;
  /** The gateway environment: the fresh database, Redis when the suite uses it, every provider at `sim`. */
  env: Record<string, string>;
  /** Stops the simulator, drops the database and the Redis keys, removes the temp directory. */
  close(): Promise<void>;
}

/**
 * What a test gateway runs against: a fresh database (a temp SQLite file, or a PostgreSQL schema with
 * TEST_DATABASE=postgres, plus a Redis key prefix with TEST_REDIS=1) and a fresh simulator that every
 * provider points at (with an upstream key, except for the `unconfigured` ones).
 */
export async function startTestBackends(
  tempPrefix: string,
  options: { simLatencyMs?: number; unconfigured?: readonly ProviderName[] } = {},
): Promise<TestBackends> {
  const dir = mkdtempSync(join(tmpdir(), tempPrefix));
  const db = await createTestDatabase(dir);
  const redis = TEST_USES_REDIS ? testRedisPrefix() : undefined;
  const sim = await startSimulator({ host: '127.0.0.1', port: 0, latencyMs: options.simLatencyMs ?? 0 });
  const env: Record<string, string> = {
    DATABASE_URL: db.url,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    ...(redis ? { REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: redis.prefix } : {}),
  };
  for (const entry of CATALOG) {
    const n = envNameOf(entry.name);
    env[`PROV_${n}_BASE_URL`] = sim.baseUrl(entry.wireFormat, slugOf(entry.name));
    if (!options.unconfigured?.includes(entry.name))
      env[`PROV_${n}_API_KEY`] = `upstream-secret-${n.toLowerCase()}`;
  }
  return {
    dir,
    db,
    sim,
    env,
    async close() {
      await sim.close();
      await db.drop();
      await redis?.cleanup();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A gateway on fresh test back-ends (`startTestBackends`). */
export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const backends = await startTestBackends('tollgate-test-', options);
  const { dir, db, sim, env } = backends;
  const config = loadConfig({ ...env, ...options.env });
  const server = await createServer(config, { logger: pino({ level: 'silent' }) });
  const conformance = watchConformance(
    server.app,
    buildOpenApi(config, VERSION) as unknown as Parameters<typeof watchConformance>[1],
  );

  async function newAccount(usd: string) {
    const created = await server.store.createAccount({
      email: `user-${Math.random().toString(36).slice(2)}@example.test`,
      role: 'user',
      passwordHash: null,
    });
    if (!created.ok) throw new Error('account creation failed');
    const amount = parseUsdToNano(usd);
    if (amount === undefined) throw new Error(`bad amount ${usd}`);
    if (amount > 0)
      await server.store.addCredit({ accountId: created.account.id, amountNano: amount, note: 'test' });
    const key = await createKey(server.store, created.account.id, 'test key');
    if (!key.ok) throw new Error('key creation failed');
    return { accountId: created.account.id, key: key.secret };
  }

  const first = await newAccount(options.credit ?? '10');
  return {
    server,
    sim,
    config,
    conformance,
    dir,
    db,
    accountId: first.accountId,
    key: first.key,
    slug: slugOf,
    newAccount,
    async chat(body, opts = {}) {
      const headers: Record<string, string> = { 'content-type': 'application/json', ...opts.headers };
      const key = opts.key === undefined ? first.key : opts.key;
      if (key !== null && !('authorization' in headers)) headers.authorization = `Bearer ${key}`;
      const res = await server.app.inject({
        method: 'POST',
        url: '/api/v1/chat/completions',
        headers,
        payload: opts.raw ?? JSON.stringify(body),
      });
      let parsed: Record<string, unknown>;
      try {
        parsed = JSON.parse(res.body) as Record<string, unknown>;
      } catch {
        parsed = { unparsable: res.body };
      }
      return { status: res.statusCode, body: parsed, headers: res.headers };
    },
    async balanceNano(accountId = first.accountId) {
      const account = await server.store.getAccount(accountId);
      if (!account) throw new Error('no account');
      return account.balanceNano;
    },
    async close() {
      await server.close();
      await backends.close();
      if (conformance.violations.length > 0) {
        throw new Error(
          `${conformance.violations.length} of ${conformance.checked} responses do not match /api/v1/openapi.json:\n` +
            conformance.violations.slice(0, 20).join('\n'),
        );
      }
    },
  };
}

export const hello = { messages: [{ role: 'user', content: 'Hello there' }] };
