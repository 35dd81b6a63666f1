import { spawn } from 'node:child_process';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, runCli } from '../helpers/cli.js';
import {
  chatBody,
  killHard,
  openHolds,
  openReadOnly,
  type ProcessEnv,
  type RunningServer,
  setupProcessEnv,
  startServer,
} from '../resilience/process-helpers.js';
import { exitWithin } from './cli-process.js';

// One server per SQLite file: a second `serve` on the file refuses without touching a hold, and a server
// that cannot listen exits instead of lingering with the database open.

/** Upstream answer time: every call is still in flight while the second server tries its luck. */
const SIM_LATENCY_MS = 10_000;
const CALLS = 8;
const CREDIT = 5_000_000_000;

let pe: ProcessEnv;
beforeAll(async () => {
  pe = await setupProcessEnv('one-server', { simLatencyMs: SIM_LATENCY_MS });
});
afterAll(async () => {
  await pe.cleanup();
});

/** Spawns `bin/tollgate serve` and collects its output; the caller waits for its exit. */
function spawnServe(env: Record<string, string>) {
  const child = spawn(process.execPath, [BIN, 'serve', '--json'], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  let stdout = '';
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  return { child, stderr: () => stderr, stdout: () => stdout };
}

interface ChargeRow {
  n: number;
  charged: number;
  cost: number;
  shortfall: number;
}

describe('one server per SQLite file', () => {
  it("a second serve on the file exits non-zero within 5 s, and the first server's in-flight calls are billed in full", async () => {
    const { accountId, key } = await pe.account('busy@example.test', CREDIT);
    let first: RunningServer | undefined;
    const db = openReadOnly(pe.dbFile);
    try {
      first = await startServer(pe.env, pe.dir);
      const url = first.url;
      const calls = Array.from({ length: CALLS }, () =>
        fetch(`${url}/api/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: chatBody('prov-deepseek'),
        }).then(async (res) => ({ status: res.status, body: (await res.json()) as Record<string, unknown> })),
      );
      // Awaited below; a failed assertion before that must not leave them unhandled.
      for (const call of calls) call.catch(() => undefined);
      const deadline = Date.now() + 10_000;
      while (openHolds(db).length < CALLS && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 25));
      expect(openHolds(db)).toHaveLength(CALLS);

      // The same file and the same port: the case that once released the running server's holds, then
      // failed to listen and lingered.
      const port = new URL(url).port;
      const started = Date.now();
      const second = spawnServe({ ...pe.env, PORT: port });
      const code = await exitWithin(second.child, 5_000);
      const exitMs = Date.now() - started;
      console.log(`second serve: exit ${code} after ${exitMs} ms`);
      // Nothing changed: every hold of the first server is still there.
      expect(openHolds(db)).toHaveLength(CALLS);
      expect(code).toBe(1);
      expect(exitMs).toBeLessThan(5_000);
      expect(second.stdout()).toBe('');
      const error = JSON.parse(second.stderr().trim().split('\n').at(-1) ?? '{}') as {
        error: { code: string; message: string };
      };
      expect(error.error.code).toBe('database_in_use');
      expect(error.error.message).toContain('another Tollgate server');
      expect(error.error.message).toContain(pe.dbFile);

      // The CLI's writers are not servers: they work while one runs (and touch no hold).
      const credit = await runCli(
        ['credits', 'add', '--email', 'busy@example.test', '--amount', '1', '--json'],
        pe.env,
      );
      expect(credit.code).toBe(0);
      const keyMade = await runCli(
        ['keys', 'create', '--email', 'busy@example.test', '--name', 'ci', '--json'],
        pe.env,
      );
      expect(keyMade.code).toBe(0);
      const copy = await runCli(['backup', join(pe.dir, 'copy.db'), '--json'], pe.env);
      expect(copy.code).toBe(0);
      expect(openHolds(db)).toHaveLength(CALLS);

      const answers = await Promise.all(calls);
      expect(answers.map((a) => a.status)).toEqual(Array(CALLS).fill(200));
      const charged = db
        .prepare(
          `SELECT COUNT(*) AS n, SUM(charged_nano) AS charged, SUM(input_cost_nano + output_cost_nano) AS cost,
                  SUM(shortfall_nano) AS shortfall
             FROM usage WHERE account_id = ? AND status = 'ok'`,
        )
        .get(accountId) as ChargeRow;
      console.log(`billed: ${charged.n} of ${CALLS} calls, ${charged.charged} nano-USD`);
      expect(charged.n).toBe(CALLS);
      expect(charged.shortfall).toBe(0);
      expect(charged.charged).toBe(charged.cost);
      expect(charged.charged).toBeGreaterThan(0);
      const billedByAnswers = answers.reduce(
        (sum, a) => sum + Math.round((a.body.meta as { cost: { total: number } }).cost.total * 1e9),
        0,
      );
      expect(charged.charged).toBe(billedByAnswers);
      const balance = (await pe.store.getAccount(accountId))?.balanceNano;
      expect(balance).toBe(CREDIT + 1_000_000_000 - charged.charged);

      const ledger = await runCli(['ledger', 'check', '--json'], pe.env);
      expect(ledger.code).toBe(0);
      expect(JSON.parse(ledger.stdout)).toMatchObject({ ok: true, problems: [] });

      first.child.kill('SIGTERM');
      expect(await exitWithin(first.child, 15_000)).toBe(0);
    } finally {
      db.close();
      await killHard(first);
    }
  }, 60_000);

  it('the lock goes with its process: after a SIGKILL the next server starts and releases the holds left', async () => {
    const { accountId, key } = await pe.account('killed@example.test', CREDIT);
    let first: RunningServer | undefined;
    let next: RunningServer | undefined;
    const db = openReadOnly(pe.dbFile);
    try {
      first = await startServer(pe.env, pe.dir);
      const url = first.url;
      const call = fetch(`${url}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: chatBody('prov-deepseek'),
      }).catch(() => undefined);
      const deadline = Date.now() + 10_000;
      while (openHolds(db).length < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
      expect(openHolds(db)).toHaveLength(1);
      await killHard(first);
      await call;
      next = await startServer(pe.env, pe.dir);
      expect(openHolds(db)).toHaveLength(0);
      expect((await pe.store.getAccount(accountId))?.balanceNano).toBe(CREDIT);
      next.child.kill('SIGTERM');
      expect(await exitWithin(next.child, 15_000)).toBe(0);
    } finally {
      db.close();
      await killHard(first);
      await killHard(next);
    }
  }, 60_000);

  it('a server that cannot listen (port taken) exits non-zero, with the reason', async () => {
    const taken: TcpServer = createTcpServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const address = taken.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    try {
      const started = Date.now();
      const serve = spawnServe({
        ...pe.env,
        DATABASE_URL: `sqlite:${join(pe.dir, 'other.db')}`,
        PORT: String(port),
      });
      const code = await exitWithin(serve.child, 5_000);
      console.log(`serve on a taken port: exit ${code} after ${Date.now() - started} ms`);
      expect(code).toBe(1);
      const error = JSON.parse(serve.stderr().trim().split('\n').at(-1) ?? '{}') as {
        error: { code: string; message: string };
      };
      expect(error.error.code).toBe('listen_failed');
      expect(error.error.message).toContain(`127.0.0.1:${port}`);
      expect(error.error.message).toMatch(/in use/);
      // It closed what it opened: the next server on its database starts (its lock was dropped).
      const after = await startServer(
        { ...pe.env, DATABASE_URL: `sqlite:${join(pe.dir, 'other.db')}`, PORT: '0' },
        pe.dir,
      );
      after.child.kill('SIGTERM');
      expect(await exitWithin(after.child, 15_000)).toBe(0);
    } finally {
      await new Promise<void>((resolve) => taken.close(() => resolve()));
    }
  }, 30_000);
});
