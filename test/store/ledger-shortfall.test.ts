import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.js';
import type { Store } from '../../src/store/types.js';
import { runCli } from '../helpers/cli.js';
import { createTestDatabase, TEST_DIALECT, type TestDatabase } from '../helpers/test-database.js';
import { fundedAccount, usageRow } from './store-fixtures.js';

let dir: string;
let db: TestDatabase;
let store: Store;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-shortfall-'));
  db = await createTestDatabase(dir, 'db.sqlite');
  store = await openStore(db.url, { sqliteSynchronous: 'NORMAL' });
  await store.migrate();
});
afterEach(async () => {
  await store.close();
  await db.drop();
  rmSync(dir, { recursive: true, force: true });
});

/** A call held at `held` and settled at `cost`: beyond hold + balance, the rest is a shortfall. */
async function call(accountId: string, id: string, held: number, cost: number) {
  const placed = await store.placeHold({
    holdId: `hold-${id}`,
    accountId,
    requestId: id,
    amountNano: held,
    owner: 'inst_a',
    createdAt: Date.now(),
    expiresAt: Date.now() + 60_000,
  });
  expect(placed.ok).toBe(true);
  return store.settle({
    holdId: `hold-${id}`,
    accountId,
    holdAmountNano: held,
    costNano: cost,
    usage: usageRow(accountId, id),
  });
}

/** The three accounts of the tests: two with unbilled service, one without. */
async function accounts() {
  const a = await fundedAccount(store, 1_000);
  const b = await fundedAccount(store, 1_000);
  const c = await fundedAccount(store, 100);
  expect(await call(a, 'a1', 900, 1_500)).toMatchObject({ chargedNano: 1_000, shortfallNano: 500 });
  await store.addCredit({ accountId: a, amountNano: 200, note: null });
  expect(await call(a, 'a2', 200, 500)).toMatchObject({ chargedNano: 200, shortfallNano: 300 });
  expect(await call(b, 'b1', 100, 100)).toMatchObject({ shortfallNano: 0 });
  expect(await call(c, 'c1', 100, 150)).toMatchObject({ chargedNano: 100, shortfallNano: 50 });
  return { a, b, c };
}

/** `bin/tollgate ledger check --json` on the test database. */
async function ledgerCheckCli(
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string }> {
  const result = await runCli(['ledger', 'check', '--json'], {
    DATABASE_URL: db.url,
    LOG_LEVEL: 'silent',
    ...env,
  });
  if (!result.stdout) throw new Error(`no output: ${result.stderr}`);
  return result;
}

describe(`ledger check (${TEST_DIALECT}): service served but not fully charged is reported per account`, () => {
  it('reports each account with a shortfall, with its total, and fails beyond the allowance (none by default)', async () => {
    const { a, c } = await accounts();
    const report = await store.ledgerCheck();
    expect(report.ok).toBe(false);
    expect(report.shortfallAllowanceNano).toBe(0);
    expect(report.shortfalls).toEqual([
      { accountId: a, email: expect.any(String), requests: 2, shortfallNano: 800 },
      { accountId: c, email: expect.any(String), requests: 1, shortfallNano: 50 },
    ]);
    // The money of every account is consistent: the shortfall is the only problem.
    expect(report.problems).toEqual([
      expect.objectContaining({
        accountId: a,
        reason: 'shortfall',
        discrepancyNano: 0,
        shortfall: { requests: 2, shortfallNano: 800 },
      }),
      expect.objectContaining({
        accountId: c,
        reason: 'shortfall',
        discrepancyNano: 0,
        shortfall: { requests: 1, shortfallNano: 50 },
      }),
    ]);

    const within50 = await store.ledgerCheck({ shortfallAllowanceNano: 50 });
    expect(within50.ok).toBe(false);
    expect(within50.problems.map((p) => p.accountId)).toEqual([a]);
    expect(within50.shortfalls).toHaveLength(2);

    const within800 = await store.ledgerCheck({ shortfallAllowanceNano: 800 });
    expect(within800).toMatchObject({ ok: true, problems: [], shortfallAllowanceNano: 800 });
    expect(within800.shortfalls.map((s) => s.shortfallNano)).toEqual([800, 50]);
  });

  it(
    'tollgate ledger check (the CLI, run from the sources) exits non-zero and names them; within LEDGER_SHORTFALL_ALLOWANCE_USD it exits 0',
    { timeout: 60_000 },
    async () => {
      const { a, c } = await accounts();
      const failed = await ledgerCheckCli();
      expect(failed.code).toBe(1);
      const out = JSON.parse(failed.stdout) as Record<string, unknown>;
      expect(out).toMatchObject({
        ok: false,
        accounts: 3,
        shortfallAllowanceNano: 0,
        shortfalls: [
          { accountId: a, requests: 2, shortfallNano: 800 },
          { accountId: c, requests: 1, shortfallNano: 50 },
        ],
      });
      const allowed = await ledgerCheckCli({ LEDGER_SHORTFALL_ALLOWANCE_USD: '0.0000008' });
      expect(allowed.code).toBe(0);
      expect(JSON.parse(allowed.stdout)).toMatchObject({
        ok: true,
        problems: [],
        shortfallAllowanceNano: 800,
      });
    },
  );
});
