/**
 * The targets, each its own process: `sim` (the upstream simulator alone: the ceiling), `bare`
 * (`bare-proxy.ts`: the floor any Node gateway pays), `sqlite` (`bin/tollgate serve` on a fresh SQLite
 * file), `postgres` (the same on a fresh PostgreSQL database, with Redis when given) and `portkey` (when
 * installed). For all but `sim` the upstream is a simulator on the load CPU. Each is probed with one
 * request (it must answer 200) before it is measured.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { createKey } from '../src/auth/keys.js';
import { CATALOG, envNameOf } from '../src/providers/catalog.js';
import { redactUrlPassword } from '../src/redact-url.js';
import { FORMATS } from '../src/simulator/server.js';
import { openStore } from '../src/store/index.js';
import {
  BENCH_DIST,
  BIN,
  baseEnv,
  binNodeFlags,
  onCleanup,
  type Pinning,
  ROOT,
  type RunningProcess,
  SIMULATOR_MAIN,
  startProcess,
} from './processes.js';
import type { RequestSpec } from './raw-http.js';
import type { TargetName } from './target-names.js';

/** The provider every request goes to: an OpenAI-compatible one, as most traffic is. */
export const BENCH_PROVIDER =
  CATALOG.find((p) => p.name === 'prov-deepseek') ?? (CATALOG[0] as (typeof CATALOG)[0]);
const UPSTREAM_KEY = 'upstream-secret';
/** Credit of the benchmark account: $1,000,000 in nanodollars, enough for any run. */
export const BENCH_CREDIT_NANO = 1_000_000 * 1_000_000_000;

/** A target that cannot run here (not installed, store not supported, …): reported, not fatal. */
export class Unavailable extends Error {}

export const TINY_MESSAGES = [{ role: 'user', content: 'hi' }];

/** The request body: `model` is the gateway's provider name or the upstream's model name. */
function chatBody(model: string): string {
  return JSON.stringify({ model, messages: TINY_MESSAGES, max_tokens: 16 });
}

/** The simulator's base URL for the benchmark provider, as the official SDK of its wire format takes it. */
export function simBaseUrl(simUrl: string, provider = BENCH_PROVIDER): string {
  const format = FORMATS.find((f) => f.format === provider.wireFormat);
  if (!format) throw new Error(`simulator has no ${provider.wireFormat} format`);
  return format.baseUrl(simUrl, provider.name.replace(/^prov-/, ''));
}

/** `PROV_<NAME>_BASE_URL` / `_API_KEY` for every provider of the catalog, all pointing at the simulator. */
export function providerEnv(simUrl: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const entry of CATALOG) {
    env[`PROV_${envNameOf(entry.name)}_BASE_URL`] = simBaseUrl(simUrl, entry);
    env[`PROV_${envNameOf(entry.name)}_API_KEY`] = UPSTREAM_KEY;
  }
  return env;
}

export interface RunningTarget {
  name: TargetName;
  /** The measured process. */
  pid: number;
  /** Also count the CPU of processes with this command name (the database server). */
  cpuCommand?: string;
  request: RequestSpec;
  /** Tollgate's database. */
  databaseUrl?: string;
  process: RunningProcess;
  stop(): Promise<void>;
}

export interface TargetContext {
  pinning: Pinning;
  /** Temp directory for this run's files (logs, databases). */
  dir: string;
  /** Admin connection for creating a database per run (`postgres` target). */
  pgAdminUrl: string;
  /** Redis of the `postgres` target (none when unset or `none`). */
  redisUrl?: string;
  /** Extra environment for Tollgate (e.g. BODY_LIMIT_BYTES). */
  tollgateEnv?: Record<string, string>;
  /** Accounts (one key each) Tollgate's load is spread over, request by request (default 1). */
  accounts?: number;
  /** The request body, instead of a plain call with `messages` (e.g. a streamed one). */
  body?: (model: string) => string;
  /** Extra arguments of the upstream simulator (e.g. its streaming pace). */
  simulatorArgs?: readonly string[];
  /** Extra arguments of the bare proxy (e.g. `--stream`, `--connections N`). */
  bareArgs?: readonly string[];
}

// ── simulator ────────────────────────────────────────────────────────────────

export async function startSimulator(
  cpu: string | undefined,
  dir: string,
  name = 'simulator',
  extraArgs: readonly string[] = [],
): Promise<RunningProcess> {
  if (!existsSync(SIMULATOR_MAIN))
    throw new Error(`${SIMULATOR_MAIN} is missing: run \`npm run build\` first`);
  return startProcess({
    name,
    command: process.execPath,
    args: [SIMULATOR_MAIN, '--host', '127.0.0.1', '--port', '0', '--latency-ms', '0', ...extraArgs],
    env: baseEnv(),
    cpu,
    dir,
  });
}

/**
 * The simulator records every request it receives (for the tests' assertions). Under load that record grows
 * without bound and slows the upstream down, so it is cleared every second while a target is measured.
 */
export function startSimulatorJanitor(simUrl: string): () => void {
  const timer = setInterval(() => {
    fetch(`${simUrl}/__sim/reset`, { method: 'POST' })
      .then((r) => r.arrayBuffer())
      .catch(() => undefined);
  }, 1000);
  timer.unref();
  return () => clearInterval(timer);
}

function bodyOf(ctx: TargetContext, model: string): string {
  return ctx.body ? ctx.body(model) : chatBody(model);
}

function simRequest(simUrl: string, ctx: TargetContext): RequestSpec {
  return {
    url: `${simBaseUrl(simUrl)}/chat/completions`,
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${UPSTREAM_KEY}` },
    body: bodyOf(ctx, BENCH_PROVIDER.model),
  };
}

/** Sends one request and throws unless it is answered 200. */
export async function probe(spec: RequestSpec): Promise<void> {
  const headers = { ...spec.headers };
  if (spec.authorizations?.[0]) headers.authorization = spec.authorizations[0];
  const response = await fetch(spec.url, { method: spec.method, headers, body: spec.body });
  const text = await response.text();
  if (response.status !== 200) {
    throw new Error(`probe request answered ${response.status}: ${text.slice(0, 300)}`);
  }
}

/** Starts an upstream simulator for a target, cleared by a janitor, stopped with it. */
async function withUpstream(
  ctx: TargetContext,
  start: (sim: RunningProcess) => Promise<Omit<RunningTarget, 'stop'>>,
): Promise<RunningTarget> {
  const sim = await startSimulator(ctx.pinning.load, ctx.dir, 'upstream', ctx.simulatorArgs);
  const stopJanitor = startSimulatorJanitor(sim.url);
  try {
    const target = await start(sim);
    return {
      ...target,
      stop: async () => {
        await target.process.stop();
        stopJanitor();
        await sim.stop();
      },
    };
  } catch (err) {
    stopJanitor();
    await sim.stop();
    throw err;
  }
}

// ── targets ──────────────────────────────────────────────────────────────────

async function startSimTarget(ctx: TargetContext): Promise<RunningTarget> {
  const sim = await startSimulator(ctx.pinning.target, ctx.dir, 'sim-target', ctx.simulatorArgs);
  const stopJanitor = startSimulatorJanitor(sim.url);
  const request = simRequest(sim.url, ctx);
  try {
    await probe(request);
  } catch (err) {
    stopJanitor();
    await sim.stop();
    throw err;
  }
  return {
    name: 'sim',
    pid: sim.pid,
    request,
    process: sim,
    stop: async () => {
      stopJanitor();
      await sim.stop();
    },
  };
}

export async function startBareTarget(ctx: TargetContext): Promise<RunningTarget> {
  return withUpstream(ctx, async (sim) => {
    const proxy = await startProcess({
      name: 'bare-proxy',
      command: process.execPath,
      args: [
        join(BENCH_DIST, 'bare-proxy.js'),
        '--upstream',
        sim.url,
        ...(ctx.bareArgs ?? ['--connections', '64']),
      ],
      env: baseEnv(),
      cpu: ctx.pinning.target,
      dir: ctx.dir,
    });
    const upstream = simRequest(sim.url, ctx);
    const request = { ...upstream, url: upstream.url.replace(sim.url, proxy.url) };
    try {
      await probe(request);
    } catch (err) {
      await proxy.stop();
      throw err;
    }
    return { name: 'bare', pid: proxy.pid, request, process: proxy };
  });
}

/**
 * `count` accounts, each with a large balance and one key, through the store API (as an operator's CLI
 * would); returns their keys.
 */
async function seedAccounts(databaseUrl: string, count: number): Promise<string[]> {
  const store = await openStore(databaseUrl);
  try {
    await store.migrate();
    const keys: string[] = [];
    for (let i = 0; i < count; i++) {
      const created = await store.createAccount({
        email: i === 0 ? 'bench@example.com' : `bench${i}@example.com`,
        role: 'user',
        passwordHash: null,
      });
      if (!created.ok) throw new Error(`could not create the benchmark account: ${created.reason}`);
      await store.addCredit({
        accountId: created.account.id,
        amountNano: BENCH_CREDIT_NANO,
        note: 'benchmark',
      });
      const key = await createKey(store, created.account.id, 'benchmark');
      if (!key.ok) throw new Error(`could not create the benchmark key: ${key.message}`);
      keys.push(key.secret);
    }
    return keys;
  } finally {
    await store.close();
  }
}

/** `bin/tollgate serve --json` pinned to the target CPU, every provider pointed at the upstream simulator. */
async function startTollgate(
  ctx: TargetContext,
  options: { name: 'sqlite' | 'postgres'; databaseUrl: string; env?: Record<string, string> },
): Promise<RunningTarget> {
  const keys = await seedAccounts(options.databaseUrl, ctx.accounts ?? 1);
  return withUpstream(ctx, async (sim) => {
    const gateway = await startProcess({
      name: `tollgate-${options.name}`,
      command: process.execPath,
      args: [...binNodeFlags(), BIN, 'serve', '--json'],
      env: baseEnv({
        DATABASE_URL: options.databaseUrl,
        PORT: '0',
        HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
        ...providerEnv(sim.url),
        ...options.env,
        ...ctx.tollgateEnv,
      }),
      cpu: ctx.pinning.target,
      dir: ctx.dir,
    });
    const request: RequestSpec = {
      url: `${gateway.url}/api/v1/chat/completions`,
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${keys[0]}` },
      body: bodyOf(ctx, BENCH_PROVIDER.name),
      ...(keys.length > 1 ? { authorizations: keys.map((k) => `Bearer ${k}`) } : {}),
    };
    try {
      await probe(request);
    } catch (err) {
      await gateway.stop();
      throw err;
    }
    return {
      name: options.name,
      pid: gateway.pid,
      ...(options.name === 'postgres' ? { cpuCommand: 'postgres' } : {}),
      databaseUrl: options.databaseUrl,
      request,
      process: gateway,
    };
  });
}

async function startSqliteTarget(ctx: TargetContext): Promise<RunningTarget> {
  return startTollgate(ctx, { name: 'sqlite', databaseUrl: `sqlite:${join(ctx.dir, 'tollgate.db')}` });
}

// ── PostgreSQL ───────────────────────────────────────────────────────────────

/** Creates `tollgate_bench_<random>` next to the admin database; `drop()` removes it. */
export async function createPgDatabase(
  adminUrl: string,
): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `tollgate_bench_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 5_000 });
  try {
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
  } catch (err) {
    throw new Unavailable(
      `PostgreSQL at ${redactUrlPassword(adminUrl)}: ${err instanceof Error ? err.message : String(err)}`,
    );
  } finally {
    await admin.end().catch(() => undefined);
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  let dropped = false;
  const drop = async () => {
    if (dropped) return;
    dropped = true;
    unregister();
    const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 5_000 });
    try {
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    } finally {
      await client.end().catch(() => undefined);
    }
  };
  const unregister = onCleanup(drop);
  return { url: url.toString(), drop };
}

async function startPostgresTarget(ctx: TargetContext): Promise<RunningTarget> {
  const database = await createPgDatabase(ctx.pgAdminUrl);
  try {
    let target: RunningTarget;
    try {
      const redis =
        ctx.redisUrl && ctx.redisUrl !== 'none'
          ? { REDIS_URL: ctx.redisUrl, REDIS_KEY_PREFIX: `tollgate-bench-${randomBytes(4).toString('hex')}:` }
          : undefined;
      target = await startTollgate(ctx, { name: 'postgres', databaseUrl: database.url, env: redis });
    } catch (err) {
      // Any start-up failure (the store not supported yet, a migration error) makes the target unavailable.
      const message = err instanceof Error ? err.message : String(err);
      throw new Unavailable(message.split('\n').slice(0, 6).join(' ').slice(0, 400));
    }
    return {
      ...target,
      stop: async () => {
        await target.stop();
        await database.drop();
      },
    };
  } catch (err) {
    await database.drop().catch(() => undefined);
    throw err;
  }
}

// ── Portkey ──────────────────────────────────────────────────────────────────

/** The start script of `@portkey-ai/gateway`, when installed: it takes `--port=N` and `--headless`. */
function portkeyStartScript(): string | undefined {
  const script = join(ROOT, 'node_modules', '@portkey-ai', 'gateway', 'build', 'start-server.js');
  return existsSync(script) ? script : undefined;
}

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

/**
 * Portkey routes a request to any OpenAI-compatible base URL with the headers `x-portkey-provider: openai`
 * and `x-portkey-custom-host: <base URL incl. /v1>`; the `Authorization` header is passed on to the upstream.
 * Recent versions only allow custom hosts listed in `ALLOWED_CUSTOM_HOSTS` (loopback by default).
 *
 * @see https://portkey.ai/docs/integrations/llms/byollm
 * @see https://portkey.ai/docs/api-reference/inference-api/headers
 */
async function startPortkeyTarget(ctx: TargetContext): Promise<RunningTarget> {
  const script = portkeyStartScript();
  if (!script) throw new Unavailable('not installed (@portkey-ai/gateway is not in node_modules)');
  return withUpstream(ctx, async (sim) => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const upstream = simRequest(sim.url, ctx);
    const request: RequestSpec = {
      ...upstream,
      url: `${url}/v1/chat/completions`,
      headers: {
        ...upstream.headers,
        'x-portkey-provider': 'openai',
        'x-portkey-custom-host': simBaseUrl(sim.url),
      },
    };
    const gateway = await startProcess({
      name: 'portkey',
      command: process.execPath,
      args: [script, `--port=${port}`, '--headless'],
      env: baseEnv({ NODE_ENV: 'production', ALLOWED_CUSTOM_HOSTS: '127.0.0.1,localhost' }),
      cpu: ctx.pinning.target,
      dir: ctx.dir,
      fixedUrl: url,
      probe: () => probe(request).then(() => true),
      timeoutMs: 30_000,
    });
    return { name: 'portkey', pid: gateway.pid, request, process: gateway };
  });
}

// ── entry ────────────────────────────────────────────────────────────────────

export function startTarget(name: TargetName, ctx: TargetContext): Promise<RunningTarget> {
  switch (name) {
    case 'sim':
      return startSimTarget(ctx);
    case 'bare':
      return startBareTarget(ctx);
    case 'sqlite':
      return startSqliteTarget(ctx);
    case 'postgres':
      return startPostgresTarget(ctx);
    case 'portkey':
      return startPortkeyTarget(ctx);
  }
}

/** A fresh temp directory, removed on clean-up. */
export function tempDir(prefix: string): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), `tollgate-bench-${prefix}-`));
  const remove = () => {
    unregister();
    rmSync(dir, { recursive: true, force: true });
  };
  const unregister = onCleanup(remove);
  return { dir, remove };
}
