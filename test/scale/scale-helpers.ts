import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  chownSync,
  closeSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { Agent, request } from 'undici';
import { CATALOG, envNameOf } from '../../src/providers/catalog.js';
import type { Simulator } from '../../src/simulator/index.js';
import { postgresTypes } from '../../src/store/postgres/open.js';
import { waitForExit } from '../helpers/cli.js';
import { slugOf } from '../helpers/harness.js';

const ROOT = join(import.meta.dirname, '..', '..');
export const CLUSTER_SCRIPT = join(ROOT, 'scripts', 'cluster.mjs');

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** The instances run the compiled server (`npm test` builds it first). */
export function assertBuilt(): void {
  const built = join(ROOT, 'dist', 'cli', 'main.js');
  let builtAt: number;
  try {
    builtAt = statSync(built).mtimeMs;
  } catch {
    throw new Error('dist/ is missing: run `npm run build` before the scale tests');
  }
  const newest = (dir: string): number =>
    readdirSync(dir, { withFileTypes: true }).reduce((max, e) => {
      const path = join(dir, e.name);
      return Math.max(max, e.isDirectory() ? newest(path) : statSync(path).mtimeMs);
    }, 0);
  if (newest(join(ROOT, 'src')) > builtAt) {
    console.warn('[scale] dist/ is older than src/: the instances run the last build (`npm run build`)');
  }
}

/** A TCP port nothing listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Every provider pointed at the simulator, with a key. */
export function providerEnv(sim: Simulator): Record<string, string> {
  const env: Record<string, string> = {};
  for (const entry of CATALOG) {
    env[`PROV_${envNameOf(entry.name)}_BASE_URL`] = sim.baseUrl(entry.wireFormat, slugOf(entry.name));
    env[`PROV_${envNameOf(entry.name)}_API_KEY`] = 'upstream-secret';
  }
  return env;
}

export interface ClusterInstance {
  url: string;
  pid: number;
  log: string;
}

export interface RunningCluster {
  /** nginx, in front of every instance. */
  url: string;
  instances: ClusterInstance[];
  dir: string;
  /** Lines the script printed after start-up (e.g. an instance that exited). */
  events(): string[];
  stop(): Promise<void>;
}

/** `node scripts/cluster.mjs` — the instances and nginx of docs/deployment.md — with `env` passed on. */
export async function startCluster(instances: number, env: Record<string, string>): Promise<RunningCluster> {
  const child = spawn(process.execPath, [CLUSTER_SCRIPT, '--instances', String(instances), '--port', '0'], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const end = Date.now() + 60_000;
  while (!out.includes('\n')) {
    if (child.exitCode !== null || Date.now() > end) {
      child.kill('SIGKILL');
      throw new Error(`cluster did not start (${child.exitCode ?? 'timeout'}):\n${err}${out}`);
    }
    await sleep(50);
  }
  const ready = JSON.parse(out.slice(0, out.indexOf('\n'))) as {
    url: string;
    instances: ClusterInstance[];
    dir: string;
  };
  return {
    ...ready,
    events: () => out.split('\n').slice(1).filter(Boolean),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const exited = waitForExit(child);
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(timer);
      rmSync(ready.dir, { recursive: true, force: true });
    },
  };
}

/** The log lines of an instance, parsed. */
export function logLines(instance: ClusterInstance): Record<string, unknown>[] {
  return readFileSync(instance.log, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

const agent = new Agent({ connections: 256, keepAliveTimeout: 10_000 });

export interface Answer {
  status: number;
  body: Record<string, unknown>;
  ms: number;
  /** When the request was sent (epoch ms). */
  at: number;
}

/** One HTTP call over a shared keep-alive pool. */
export async function call(
  url: string,
  options: { method?: 'GET' | 'POST'; key?: string; body?: unknown } = {},
): Promise<Answer> {
  const at = Date.now();
  const res = await request(url, {
    method: options.method ?? (options.body === undefined ? 'GET' : 'POST'),
    dispatcher: agent,
    headers: {
      ...(options.key ? { authorization: `Bearer ${options.key}` } : {}),
      ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
    headersTimeout: 60_000,
    bodyTimeout: 60_000,
  });
  const text = await res.body.text();
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    body = { unparsable: text };
  }
  return { status: res.statusCode, body, ms: Date.now() - at, at };
}

/**
 * Calls `GET /api/v1/key` with `key` on every instance every 10 ms until that instance refuses it (401)
 * or `forMs` passes; `polls[n]` collects instance n's answers, `done` settles when every poller stopped.
 */
export function pollUntilRefused(
  instances: readonly { url: string }[],
  key: string,
  forMs: number,
): { polls: Answer[][]; done: Promise<void> } {
  const polls: Answer[][] = instances.map(() => []);
  const pollers = instances.map(async (instance, n) => {
    const end = Date.now() + forMs;
    while (Date.now() < end) {
      const answer = await call(`${instance.url}/api/v1/key`, { key });
      polls[n]?.push(answer);
      if (answer.status === 401) return;
      await sleep(10);
    }
  });
  return { polls, done: Promise.all(pollers).then(() => {}) };
}

/**
 * Per instance, counted from `revokedAt`: when its first refusal answered (infinite if none did), and when
 * the latest still-accepted request was sent (negative: before the revocation).
 */
export function revocationTimes(
  polls: readonly Answer[][],
  revokedAt: number,
): { refused: Answer | undefined; refusedWithinMs: number; lastAcceptedMs: number }[] {
  return polls.map((answers) => {
    const refused = answers.find((a) => a.status === 401);
    return {
      refused,
      refusedWithinMs: refused ? refused.at + refused.ms - revokedAt : Number.POSITIVE_INFINITY,
      lastAcceptedMs: Math.max(...answers.filter((a) => a.status === 200).map((a) => a.at)) - revokedAt,
    };
  });
}

export function errorCode(answer: Answer): string | undefined {
  return (answer.body.error as { code?: string } | undefined)?.code;
}

export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] as number;
}

/** Runs `bin/tollgate ledger check --json` against a database; its exit code and report. */
export function ledgerCheck(env: Record<string, string>): { code: number; report: { ok: boolean } } {
  try {
    const stdout = execFileSync(
      process.execPath,
      [join(ROOT, 'bin', 'tollgate'), 'ledger', 'check', '--json'],
      {
        env: { PATH: process.env.PATH ?? '', ...env },
        encoding: 'utf8',
      },
    );
    return { code: 0, report: JSON.parse(stdout) as { ok: boolean } };
  } catch (err) {
    const e = err as { status?: number; stdout?: string };
    return { code: e.status ?? 1, report: JSON.parse(e.stdout || '{"ok":false}') as { ok: boolean } };
  }
}

// ── private servers for the fault tests ─────────────────────────────────────────────────────────────

const PG_BIN = '/usr/lib/postgresql/15/bin';

/** PostgreSQL refuses to run as root: as root, the server runs as the `postgres` user. */
function postgresUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  return { uid, gid };
}

export interface PrivateServer {
  url: string;
  port: number;
  /** Stops it: `fast` closes connections cleanly, `immediate`/`kill` like a crash or a pulled cable. */
  stop(mode?: 'fast' | 'immediate' | 'kill'): Promise<void>;
  /** Starts it again on the same port (and data). */
  start(): Promise<void>;
  /** Freezes it (SIGSTOP, its children too): connections stay open but nothing answers. `resume` thaws it. */
  pause(): void;
  resume(): void;
  /** Stops it for good and removes its files. */
  destroy(): Promise<void>;
}

/** Signals a server this test started and its child processes (PostgreSQL's backends), by pid. */
function signalTree(child: ChildProcess | undefined, signal: NodeJS.Signals): void {
  if (!child?.pid || child.exitCode !== null) return;
  let children: number[] = [];
  try {
    children = execFileSync('pgrep', ['-P', String(child.pid)], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    // no children
  }
  process.kill(child.pid, signal);
  for (const pid of children) {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}

/** A throw-away PostgreSQL 15 cluster of the test's own, on a free port (initdb + postgres). */
export async function startPrivatePostgres(): Promise<PrivateServer> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-pg-'));
  const data = join(dir, 'data');
  const user = postgresUser();
  if (user) chownSync(dir, user.uid, user.gid);
  execFileSync(
    `${PG_BIN}/initdb`,
    ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'],
    {
      stdio: 'ignore',
      ...(user ?? {}),
    },
  );
  const port = await freePort();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let child: ChildProcess | undefined;
  const server: PrivateServer = {
    url,
    port,
    async start() {
      const fd = openSync(join(dir, 'postgres.log'), 'a');
      child = spawn(
        `${PG_BIN}/postgres`,
        [
          '-D',
          data,
          '-p',
          String(port),
          '-k',
          dir,
          '-c',
          'listen_addresses=127.0.0.1',
          // Commits are acknowledged only once written (synchronous_commit stays on): a crash of this
          // server must not lose a settled charge. Flushing to disk (fsync) matters only if the machine
          // itself goes down, which these tests do not simulate.
          '-c',
          'fsync=off',
          '-c',
          'full_page_writes=off',
          '-c',
          'shared_buffers=32MB',
        ],
        { stdio: ['ignore', fd, fd], ...(user ?? {}) },
      );
      closeSync(fd);
      const end = Date.now() + 30_000;
      for (;;) {
        const client = new pg.Client({
          connectionString: url,
          connectionTimeoutMillis: 1_000,
          types: postgresTypes,
        });
        client.on('error', () => {});
        try {
          await client.connect();
          await client.query('select 1');
          await client.end();
          return;
        } catch {
          await client.end().catch(() => undefined);
        }
        if (child.exitCode !== null || Date.now() > end) {
          throw new Error(
            `private PostgreSQL did not start:\n${readFileSync(join(dir, 'postgres.log'), 'utf8')}`,
          );
        }
        await sleep(100);
      }
    },
    pause() {
      signalTree(child, 'SIGSTOP');
    },
    resume() {
      signalTree(child, 'SIGCONT');
    },
    async stop(mode = 'fast') {
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      const exited = waitForExit(child);
      child.kill(mode === 'fast' ? 'SIGINT' : mode === 'immediate' ? 'SIGQUIT' : 'SIGKILL');
      await exited;
      if (mode === 'kill') {
        // Children of a killed postmaster end by themselves once they notice; wait for the port.
        await sleep(500);
      }
    },
    async destroy() {
      await server.stop('immediate');
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await server.start();
  return server;
}

/** A Redis of the test's own, without persistence, on a free port. */
export async function startPrivateRedis(): Promise<PrivateServer> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-redis-'));
  const port = await freePort();
  let child: ChildProcess | undefined;
  const server: PrivateServer = {
    url: `redis://127.0.0.1:${port}`,
    port,
    async start() {
      const log = join(dir, 'redis.log');
      const seen = (() => {
        try {
          return readFileSync(log, 'utf8').length;
        } catch {
          return 0;
        }
      })();
      const fd = openSync(log, 'a');
      child = spawn(
        'redis-server',
        ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
        { stdio: ['ignore', fd, fd] },
      );
      closeSync(fd);
      const end = Date.now() + 10_000;
      while (!readFileSync(log, 'utf8').slice(seen).includes('Ready to accept connections')) {
        if (child.exitCode !== null || Date.now() > end) {
          throw new Error(`private Redis did not start:\n${readFileSync(log, 'utf8')}`);
        }
        await sleep(50);
      }
    },
    pause() {
      signalTree(child, 'SIGSTOP');
    },
    resume() {
      signalTree(child, 'SIGCONT');
    },
    async stop(mode = 'fast') {
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      const exited = waitForExit(child);
      child.kill(mode === 'fast' ? 'SIGTERM' : 'SIGKILL');
      await exited;
    },
    async destroy() {
      await server.stop('kill');
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await server.start();
  return server;
}
