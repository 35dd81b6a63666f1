import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createKey } from '../../src/auth/keys.js';
import { CATALOG, envNameOf } from '../../src/providers/catalog.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { openStore } from '../../src/store/index.js';
import type { Store } from '../../src/store/types.js';
import { BIN, waitForExit } from '../helpers/cli.js';
import { slugOf } from '../helpers/harness.js';

/** A temp SQLite file, a simulator every provider points at, and a store handle for set-up and checks. */
export interface ProcessEnv {
  dir: string;
  dbFile: string;
  sim: Simulator;
  env: Record<string, string>;
  store: Store;
  /** A new account with `creditNano` and one key. */
  account(email: string, creditNano: number): Promise<{ accountId: string; key: string }>;
  cleanup(): Promise<void>;
}

export async function setupProcessEnv(
  prefix: string,
  options: { simLatencyMs?: number; env?: Record<string, string> } = {},
): Promise<ProcessEnv> {
  const dir = mkdtempSync(join(tmpdir(), `tollgate-${prefix}-`));
  const dbFile = join(dir, 'gw.db');
  const sim = await startSimulator({ host: '127.0.0.1', port: 0, latencyMs: options.simLatencyMs ?? 0 });
  const env: Record<string, string> = {
    DATABASE_URL: `sqlite:${dbFile}`,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    ...options.env,
  };
  for (const entry of CATALOG) {
    env[`PROV_${envNameOf(entry.name)}_BASE_URL`] = sim.baseUrl(entry.wireFormat, slugOf(entry.name));
    env[`PROV_${envNameOf(entry.name)}_API_KEY`] = 'upstream-secret';
  }
  const store = await openStore(env.DATABASE_URL as string);
  await store.migrate();
  let closed = false;
  return {
    dir,
    dbFile,
    sim,
    env,
    store,
    async account(email, creditNano) {
      const created = await store.createAccount({ email, role: 'user', passwordHash: null });
      if (!created.ok) throw new Error(`account ${email}`);
      if (creditNano > 0)
        await store.addCredit({ accountId: created.account.id, amountNano: creditNano, note: null });
      const k = await createKey(store, created.account.id, 'resilience');
      if (!k.ok) throw new Error('key');
      return { accountId: created.account.id, key: k.secret };
    },
    async cleanup() {
      if (closed) return;
      closed = true;
      await store.close().catch(() => undefined);
      await sim.close().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface RunningServer {
  child: ChildProcess;
  url: string;
  pid: number;
  output: () => string;
  logFile: string;
}

let serverSeq = 0;

/**
 * Starts `bin/tollgate serve --json` with stdout/stderr going to a file in `dir`, not a pipe: on Linux a
 * process blocks writing to a full pipe, so a busy test process would otherwise throttle the server's
 * logging and, through it, the server itself.
 */
export async function startServer(
  env: Record<string, string>,
  dir: string,
  timeoutMs = 20_000,
): Promise<RunningServer> {
  const logFile = join(dir, `server-${++serverSeq}.log`);
  const fd = openSync(logFile, 'w');
  const child = spawn(process.execPath, [BIN, 'serve', '--json'], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  const pid = child.pid;
  if (pid === undefined) throw new Error('no pid');
  const output = () => {
    try {
      return readFileSync(logFile, 'utf8');
    } catch {
      return '';
    }
  };
  const end = Date.now() + timeoutMs;
  for (;;) {
    const match = output().match(/"url":"([^"]+)"/);
    if (match) return { child, url: match[1] as string, pid, output, logFile };
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`server exited (${child.exitCode ?? child.signalCode}) before ready:\n${output()}`);
    }
    if (Date.now() > end) {
      child.kill('SIGKILL');
      throw new Error(`server not ready in ${timeoutMs} ms:\n${output()}`);
    }
    await sleep(20);
  }
}

/** SIGKILLs a server (if still running) and waits for its exit. */
export async function killHard(server: RunningServer | undefined): Promise<void> {
  if (!server) return;
  const { child } = server;
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await waitForExit(child);
}

/** Read-only view of the database for checks the store interface does not offer. */
export function openReadOnly(dbFile: string): Database.Database {
  return new Database(dbFile, { readonly: true, fileMustExist: true });
}

/** The holds table keeps open holds only: a closed hold's row is deleted. */
export function openHolds(db: Database.Database): { id: string; expires_at: number }[] {
  return db.prepare('SELECT id, expires_at FROM holds').all() as {
    id: string;
    expires_at: number;
  }[];
}

/** Charges per request id: on usage rows, and as ledger rows (the record before migration 0007), together. */
export function chargeCounts(db: Database.Database): Map<string, number> {
  const rows = db
    .prepare(
      `SELECT request_id, COUNT(*) AS n
         FROM (SELECT request_id FROM ledger WHERE kind = 'charge'
               UNION ALL SELECT request_id FROM usage WHERE charged_nano > 0)
        GROUP BY request_id`,
    )
    .all() as { request_id: string | null; n: number }[];
  const map = new Map<string, number>();
  for (const r of rows) if (r.request_id !== null) map.set(r.request_id, r.n);
  return map;
}

export function minBalance(db: Database.Database): number {
  const row = db.prepare('SELECT MIN(balance_nano) AS m FROM accounts').get() as { m: number | null };
  return row.m ?? 0;
}

/** VmRSS of a process in kB (Linux), or undefined when unreadable. */
export function rssKb(pid: number): number | undefined {
  try {
    const match = readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmRSS:\s+(\d+)\s+kB/m);
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** mulberry32: a small seeded PRNG, so a failing run can be replayed by its seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] as number;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export function chatBody(provider: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ provider, messages: [{ role: 'user', content: 'Hello there' }], ...extra });
}
