import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../../src/auth/keys.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/store.js';
import { waitForExit } from '../helpers/cli.js';
import { createPostgresSchema } from '../helpers/test-database.js';
import { chatBody, killHard, type RunningServer, startServer } from '../resilience/process-helpers.js';
import { assertBuilt, logLines, providerEnv, sleep } from './scale-helpers.js';

/**
 * Two `bin/tollgate serve` processes on one PostgreSQL database. The holds of an instance that dies are
 * released once it has been silent for INSTANCE_TIMEOUT_MS (docs/operations.md, "Crash safety": a server
 * releases the holds whose owner is gone), not only at their expiry minutes later; those of a live
 * instance are kept however long its calls run; an instance stopped with SIGTERM settles the calls whose
 * clients its drain cut, then forgets itself.
 */

const TIMEOUT_MS = 1_200;
const SWEEP_MS = 200;
const CREDIT = 1_000_000_000;
/** Each call's upstream answer takes this long: the calls are in flight through the whole check. */
const UPSTREAM_MS = 8_000;

let sim: Simulator;
let schema: Awaited<ReturnType<typeof createPostgresSchema>>;
let store: PostgresStore;
let dir: string;
let env: Record<string, string>;
let key: string;
let accountId: string;
const servers: RunningServer[] = [];

beforeAll(async () => {
  assertBuilt();
  sim = await startSimulator({ host: '127.0.0.1', port: 0, latencyMs: UPSTREAM_MS });
  schema = await createPostgresSchema();
  dir = mkdtempSync(join(tmpdir(), 'tollgate-instance-gone-'));
  env = {
    DATABASE_URL: schema.url,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    INSTANCE_TIMEOUT_MS: String(TIMEOUT_MS),
    HOLD_SWEEP_INTERVAL_MS: String(SWEEP_MS),
    // Expiry is ten minutes away: only the instance records can release a hold within this test.
    HOLD_GRACE_MS: '600000',
    SHUTDOWN_DRAIN_MS: '300',
    ...providerEnv(sim),
  };
  store = openPostgresStore(schema.url);
  await store.migrate();
  const created = await store.createAccount({ email: 'gone@example.test', role: 'user', passwordHash: null });
  if (!created.ok) throw new Error('account');
  accountId = created.account.id;
  await store.addCredit({ accountId, amountNano: CREDIT, note: null });
  const k = await createKey(store, accountId, 'instance-gone');
  if (!k.ok) throw new Error('key');
  key = k.secret;
}, 60_000);

afterAll(async () => {
  for (const s of servers) await killHard(s);
  await store?.close();
  await sim?.close();
  await schema?.drop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Starts `count` calls on `server` without waiting for them (they end when the server goes). */
function startCalls(server: RunningServer, count: number): void {
  for (let i = 0; i < count; i++) {
    fetch(`${server.url}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: chatBody('prov-deepseek', { max_tokens: 16 }),
    })
      .then((res) => res.arrayBuffer())
      .catch(() => undefined);
  }
}

async function until(what: string, check: () => Promise<boolean>, ms: number): Promise<number> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > ms) throw new Error(`not within ${ms} ms: ${what}`);
    await sleep(25);
  }
  return Date.now() - started;
}

const openHolds = async () => (await store.openHoldsTotal()).count;
const instanceRows = async () =>
  (await store.kysely.selectFrom('instances').select('owner').execute()).length;

describe('instances that stop on PostgreSQL', () => {
  it('a killed instance\u2019s holds come back after INSTANCE_TIMEOUT_MS; a live one\u2019s stay; SIGTERM settles its own', async () => {
    const a = await startServer(env, dir);
    servers.push(a);
    const b = await startServer(env, dir);
    servers.push(b);
    expect(await instanceRows()).toBe(2);

    startCalls(a, 4);
    await until('4 holds placed through A', async () => (await openHolds()) === 4, 5_000);
    // A is alive and says so: twice its timeout later, B's sweeper (every 200 ms) has left its holds alone.
    await sleep(2 * TIMEOUT_MS + SWEEP_MS);
    expect(await openHolds()).toBe(4);

    a.child.kill('SIGKILL');
    await waitForExit(a.child);
    const killedAt = Date.now();
    const waited = await until('A\u2019s holds released by B', async () => (await openHolds()) === 0, 10_000);
    const elapsed = Date.now() - killedAt;
    console.log(`instance-gone: holds of the killed instance released ${elapsed} ms after the kill`);
    expect(waited).toBeLessThanOrEqual(TIMEOUT_MS + 2 * SWEEP_MS + 1_000);
    expect((await store.getAccount(accountId))?.balanceNano).toBe(CREDIT);
    const releasedByB = logLines({ url: b.url, pid: b.pid, log: b.logFile }).filter(
      (l) => l.msg === 'released holds of expired calls or of instances gone silent',
    );
    expect(releasedByB.map((l) => l.released)).toEqual([4]);
    // B forgot A once it owned no hold; its own record remains.
    await until('A\u2019s record forgotten', async () => (await instanceRows()) === 1, 2_000);

    // SIGTERM with calls in flight: the drain (300 ms) cuts their clients, the upstream calls go on to
    // their answers, and B settles them (billed, the client marked gone) before it forgets itself.
    sim.setLatency(1_500);
    startCalls(b, 3);
    await until('3 holds placed through B', async () => (await openHolds()) === 3, 5_000);
    b.child.kill('SIGTERM');
    expect(await waitForExit(b.child)).toBe(0);
    expect(await openHolds()).toBe(0);
    expect(await instanceRows()).toBe(0);
    const usage = await store.listUsage(accountId, { limit: 10 });
    const settled = usage.filter((u) => u.status === 'ok');
    expect(settled.map((u) => u.clientGone)).toEqual([true, true, true]);
    const charged = settled.reduce((sum, u) => sum + u.inputCostNano + u.outputCostNano, 0);
    expect(charged).toBeGreaterThan(0);
    expect((await store.getAccount(accountId))?.balanceNano).toBe(CREDIT - charged);
    const report = await store.ledgerCheck();
    expect(report.problems).toEqual([]);
    expect(report.ok).toBe(true);
  }, 60_000);
});
