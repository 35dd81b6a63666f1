import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../../src/auth/keys.js';
import { CATALOG, envNameOf } from '../../src/providers/catalog.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { openStore } from '../../src/store/index.js';
import type { Store } from '../../src/store/types.js';
import { startCli, waitForExit } from '../helpers/cli.js';
import { slugOf } from '../helpers/harness.js';

let dir: string;
let sim: Simulator;
let env: Record<string, string>;
let store: Store;
let accountId: string;
let key: string;
const CREDIT = 5_000_000_000;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-restart-'));
  sim = await startSimulator({ host: '127.0.0.1', port: 0 });
  env = { DATABASE_URL: `sqlite:${join(dir, 'gw.db')}`, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn' };
  for (const entry of CATALOG) {
    env[`PROV_${envNameOf(entry.name)}_BASE_URL`] = sim.baseUrl(entry.wireFormat, slugOf(entry.name));
    env[`PROV_${envNameOf(entry.name)}_API_KEY`] = 'upstream-secret';
  }
  store = await openStore(env.DATABASE_URL as string);
  await store.migrate();
  const created = await store.createAccount({
    email: 'restart@example.test',
    role: 'user',
    passwordHash: null,
  });
  if (!created.ok) throw new Error('account');
  accountId = created.account.id;
  await store.addCredit({ accountId, amountNano: CREDIT, note: null });
  const k = await createKey(store, accountId, 'restart');
  if (!k.ok) throw new Error('key');
  key = k.secret;
});

afterAll(async () => {
  await store.close();
  await sim.close();
  rmSync(dir, { recursive: true, force: true });
});

async function until(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('condition not met in time');
}

describe('crash safety', () => {
  it('holds left by a SIGKILLed server are released on the next start', async () => {
    sim.setFault('deepseek', { kind: 'hang' } as never);
    const first = await startCli(['serve', '--json'], env, /"url":"([^"]+)"/);
    const url = first.firstMatch[1] as string;
    const inFlight = Array.from({ length: 5 }, () =>
      fetch(`${url}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ provider: 'prov-deepseek', messages: [{ role: 'user', content: 'hi' }] }),
      }).catch(() => undefined),
    );
    await until(
      async () =>
        (await store.ledgerCheck()).ok &&
        (await store.openHoldsNano(accountId)) > 0 &&
        (await sim.requests('deepseek')).length >= 5,
    );
    const held = await store.openHoldsNano(accountId);
    expect(held).toBeGreaterThan(0);
    expect((await store.getAccount(accountId))?.balanceNano).toBe(CREDIT - held);

    first.child.kill('SIGKILL');
    await waitForExit(first.child);
    await Promise.all(inFlight);
    // The process is gone; its holds are still in the database.
    expect(await store.openHoldsNano(accountId)).toBe(held);
    sim.setFault('deepseek', null);

    const second = await startCli(['serve', '--json'], env, /"url":"([^"]+)"/);
    try {
      expect(await store.openHoldsNano(accountId)).toBe(0);
      expect((await store.getAccount(accountId))?.balanceNano).toBe(CREDIT);
      expect((await store.ledgerCheck()).ok).toBe(true);
      // And the restarted server serves and bills normally.
      const res = await fetch(`${second.firstMatch[1]}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ provider: 'prov-deepseek', messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(res.status).toBe(200);
      expect((await store.getAccount(accountId))?.balanceNano).toBeLessThan(CREDIT);
    } finally {
      second.child.kill('SIGTERM');
      expect(await waitForExit(second.child)).toBe(0);
    }
  });
});
