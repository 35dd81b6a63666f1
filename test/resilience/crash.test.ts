import type Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CATALOG } from '../../src/providers/catalog.js';
import { runCli, waitForExit } from '../helpers/cli.js';
import {
  chargeCounts,
  chatBody,
  killHard,
  minBalance,
  openHolds,
  openReadOnly,
  type ProcessEnv,
  type RunningServer,
  seededRandom,
  setupProcessEnv,
  sleep,
  startServer,
} from './process-helpers.js';

/**
 * A real `bin/tollgate serve` under concurrent load, SIGKILLed at seeded-random moments. After every kill
 * the ledger must balance, the restart must release every hold, and each completion the client received
 * must be charged exactly once.
 */

const SEED = Number(process.env.CRASH_SEED ?? 20240611);
const KILLS = 10;
const LOOPS = 16;

let pe: ProcessEnv;
let db: Database.Database;
let server: RunningServer | undefined;
let latencyTimer: NodeJS.Timeout | undefined;
const accounts: { accountId: string; key: string }[] = [];

beforeAll(async () => {
  pe = await setupProcessEnv('crash', { simLatencyMs: 50 });
  // Limited balances: a deepseek call holds ~1.7M nano at the default cap, a claude call ~61M, so the
  // small accounts see 402s (and capped holds) while the big one almost never does.
  const credits = [10_000_000_000, 60_000_000, 8_000_000, 2_500_000];
  for (const [i, c] of credits.entries()) accounts.push(await pe.account(`crash${i}@example.test`, c));
  db = openReadOnly(pe.dbFile);
});

afterAll(async () => {
  if (latencyTimer) clearInterval(latencyTimer);
  await killHard(server);
  db?.close();
  await pe?.cleanup();
});

interface Outcome {
  status: number;
  id?: string;
}

describe('SIGKILL under load', () => {
  it(`keeps the ledger exact across ${KILLS} random kills (seed ${SEED})`, async () => {
    const rand = seededRandom(SEED);
    const providers = CATALOG.map((c) => c.name);
    // Upstream latency varies between 20 and 80 ms so requests are in flight at every moment.
    latencyTimer = setInterval(() => pe.sim.setLatency(20 + Math.floor(rand() * 60)), 5);

    const totals = { ok: 0, refused402: 0, cut: 0, other: 0, kills: 0 };
    const statusSeen = new Map<number, number>();
    server = await startServer(pe.env, pe.dir);

    for (let round = 0; round < KILLS; round++) {
      const current = server;
      const received: Outcome[] = [];
      let stop = false;
      let cut = 0;
      const loops = Array.from({ length: LOOPS }, async (_, i) => {
        const account = accounts[i % accounts.length] as { key: string };
        while (!stop) {
          const provider = providers[Math.floor(rand() * providers.length)] as string;
          try {
            const res = await fetch(`${current.url}/api/v1/chat/completions`, {
              method: 'POST',
              headers: { authorization: `Bearer ${account.key}`, 'content-type': 'application/json' },
              body: chatBody(provider),
            });
            const body = (await res.json()) as { id?: unknown };
            received.push({ status: res.status, id: typeof body.id === 'string' ? body.id : undefined });
          } catch {
            cut++; // cut off by the kill (or refused after it)
          }
        }
      });

      await sleep(100 + Math.floor(rand() * 600));
      stop = true;
      current.child.kill('SIGKILL');
      await waitForExit(current.child);
      await Promise.all(loops);
      totals.kills++;

      // Between the kill and the restart: the dead process's holds are still open, yet the books balance
      // (every hold/settle/release is one transaction, so nothing is half-applied).
      const beforeRestart = await pe.store.ledgerCheck();
      expect(beforeRestart.problems).toEqual([]);
      expect(beforeRestart.ok).toBe(true);

      server = await startServer(pe.env, pe.dir);
      const report = await pe.store.ledgerCheck();
      expect(report.problems).toEqual([]);
      expect(report.ok).toBe(true);
      expect(openHolds(db)).toEqual([]);
      expect(minBalance(db)).toBeGreaterThanOrEqual(0);

      const charges = chargeCounts(db);
      for (const [requestId, n] of charges) expect(n, `charges of ${requestId}`).toBe(1);
      for (const o of received) {
        statusSeen.set(o.status, (statusSeen.get(o.status) ?? 0) + 1);
        if (o.status === 200) {
          totals.ok++;
          expect(o.id, 'a 200 body carries its completion id').toMatch(/^chatcmpl-/);
          expect(charges.get(o.id as string), `charge rows of ${o.id}`).toBe(1);
        } else if (o.status === 402) totals.refused402++;
        else totals.other++;
      }
      totals.cut += cut;
    }

    const cli = await runCli(['ledger', 'check', '--json'], pe.env);
    console.log(
      `crash: seed=${SEED} kills=${totals.kills} served=${totals.ok} 402=${totals.refused402} ` +
        `cut=${totals.cut} other=${totals.other} statuses=${JSON.stringify(Object.fromEntries(statusSeen))}`,
    );
    expect(cli.code, cli.stdout + cli.stderr).toBe(0);
    expect((JSON.parse(cli.stdout) as { ok: boolean }).ok).toBe(true);
    expect(totals.kills).toBeGreaterThanOrEqual(10);
    expect(totals.ok).toBeGreaterThan(0);
    expect(totals.refused402).toBeGreaterThan(0);
    expect(totals.other).toBe(0);
  }, 60_000);
});
