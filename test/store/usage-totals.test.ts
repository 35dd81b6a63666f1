import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reportScope, rollUp } from '../../src/dashboard/usage-report.js';
import type { DashboardStore } from '../../src/store/dashboard-types.js';
import { openStore } from '../../src/store/index.js';
import type { Store, UsageRecord } from '../../src/store/types.js';
import { createTestDatabase, TEST_DIALECT, type TestDatabase } from '../helpers/test-database.js';
import { fundedAccount, usageRow } from './store-fixtures.js';

let dir: string;
let db: TestDatabase;
let store: Store;
let dashboard: DashboardStore;
const accounts: string[] = [];

const DAY = 86_400_000;
const T0 = Date.UTC(2026, 10, 1, 9, 30);
const PROVIDERS = ['prov-qwen', 'prov-claude', 'prov-gemini'];

/** A charged call, settled through a hold as the pipeline settles one. */
async function charged(usage: UsageRecord, holdNano: number): Promise<void> {
  const holdId = `h_${usage.requestId}`;
  const placed = await store.placeHold({
    holdId,
    accountId: usage.accountId,
    requestId: usage.requestId,
    amountNano: holdNano,
    owner: 'test',
    createdAt: usage.createdAt,
    expiresAt: usage.createdAt + 60_000,
  });
  if (!placed.ok) throw new Error('hold refused');
  await store.settle({
    holdId,
    accountId: usage.accountId,
    holdAmountNano: holdNano,
    costNano: usage.inputCostNano + usage.outputCostNano,
    usage,
  });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-totals-'));
  db = await createTestDatabase(dir, 'db.sqlite');
  store = await openStore(db.url, { sqliteSynchronous: 'NORMAL' });
  await store.migrate();
  dashboard = store.dashboard(() => T0 + 10 * DAY);
  let n = 0;
  for (let a = 0; a < 4; a++) {
    const id = await fundedAccount(store, 10_000_000);
    accounts.push(id);
    for (let i = 0; i < 12; i++) {
      n++;
      const usage = usageRow(id, `req_${n}`, {
        keyId: `key_${a}_${i % 2}`,
        provider: PROVIDERS[(a + i) % 3] as string,
        model: `model-${(a + i) % 3}`,
        promptTokens: 100 + i,
        completionTokens: 10 * a + i,
        inputCostNano: 1_111 * (i + 1) + a,
        outputCostNano: 7_777 * (a + 1) + i,
        createdAt: T0 + (i % 4) * DAY + i * 3_600_000 + a * 60_000,
      });
      await charged(usage, 200_000);
    }
    // A failed call (no charge) and one refused before any hold.
    await store.recordUsage(
      usageRow(id, `req_f${a}`, {
        status: 'error',
        errorCode: 'provider_error',
        httpStatus: 502,
        createdAt: T0 + a,
      }),
    );
    await store.recordRefusal({
      accountId: id,
      keyId: `key_${a}_0`,
      errorCode: 'insufficient_balance',
      httpStatus: 402,
      at: T0 + DAY + a,
    });
  }
  // Outside the range asked for: not counted.
  await charged(
    usageRow(accounts[0] as string, 'req_old', { inputCostNano: 5, createdAt: T0 - 30 * DAY }),
    10,
  );
});
afterAll(async () => {
  await store?.close();
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});

describe(`the admin's totals (${TEST_DIALECT})`, () => {
  it('equal the sum of every account usage rows, by account, provider and model, on any zone and interval', async () => {
    const rows = await db.query<{
      account_id: string;
      provider: string;
      model: string;
      status: string;
      charged_nano: number | string;
      prompt_tokens: number | string;
    }>(
      `select account_id, provider, model, status, charged_nano, prompt_tokens from usage where created_at >= ${T0 - DAY}`,
    );
    const sum = (pick: (r: (typeof rows)[number]) => boolean) =>
      rows.filter(pick).reduce((s, r) => s + Number(r.charged_nano), 0);
    expect(sum(() => true)).toBeGreaterThan(0);
    // The store's own figure of each account's charges, from its rows.
    const charges = await Promise.all(accounts.map((a) => store.chargesSince(a, [T0 - DAY])));

    for (const [tz, interval] of [
      ['UTC', 'day'],
      ['America/Los_Angeles', 'hour'],
      ['Asia/Kolkata', 'day'],
    ] as const) {
      const scope = reportScope({ from: '2026-10-31', to: '2026-11-06', tz, interval }, T0);
      const report = rollUp(
        scope,
        await dashboard.usageTotals(scope.query),
        await dashboard.refusalTotals(scope.query),
      );
      expect(report.totals.cost_nano).toBe(sum(() => true));
      expect(report.totals.cost_nano).toBe(charges.reduce((s, c) => s + (c[0] ?? 0), 0));
      expect(report.totals.requests).toBe(rows.length);
      expect(report.totals.errors).toBe(4);
      expect(report.totals.refused).toBe(4);
      expect(report.totals.prompt_tokens).toBe(rows.reduce((s, r) => s + Number(r.prompt_tokens), 0));
      expect(report.series.reduce((s, b) => s + b.cost_nano, 0)).toBe(report.totals.cost_nano);
      expect(report.series.reduce((s, b) => s + b.requests, 0)).toBe(rows.length);
      expect(report.series).toHaveLength(interval === 'day' ? 7 : 7 * 24);
      for (const [i, a] of accounts.entries()) {
        const entry = report.by_account.find((e) => e.account_id === a);
        expect(entry?.cost_nano).toBe(sum((r) => r.account_id === a));
        expect(entry?.cost_nano).toBe(charges[i]?.[0]);
      }
      for (const p of PROVIDERS) {
        expect(report.by_provider.find((e) => e.provider === p)?.cost_nano).toBe(
          sum((r) => r.provider === p),
        );
      }
      for (const m of ['model-0', 'model-1', 'model-2']) {
        expect(report.by_model.find((e) => e.model === m)?.cost_nano).toBe(sum((r) => r.model === m));
      }
      expect(report.refused).toEqual([{ reason: 'insufficient_balance', requests: 4 }]);
    }
  });

  it("one account's totals and a provider filter keep to their rows; the zone moves rows between days", async () => {
    const a = accounts[1] as string;
    const utc = reportScope({ from: '2026-11-01', to: '2026-11-01', account_id: a }, T0);
    utc.query.accountId = a;
    const own = await dashboard.usageTotals(utc.query);
    expect(new Set(own.map((r) => r.accountId))).toEqual(new Set([a]));
    const filtered = reportScope({ from: '2026-10-01', to: '2026-11-30', provider: 'prov-qwen' }, T0);
    const qwen = await dashboard.usageTotals(filtered.query);
    expect(qwen.length).toBeGreaterThan(0);
    expect(new Set(qwen.map((r) => r.provider))).toEqual(new Set(['prov-qwen']));
    // 09:30 UTC on Nov 1 plus up to 11 h is still Nov 1 in UTC; in Tokyo (+9) the later ones are Nov 2.
    const tokyo = reportScope({ from: '2026-11-01', to: '2026-11-01', tz: 'Asia/Tokyo' }, T0);
    const day = rollUp(tokyo, await dashboard.usageTotals(tokyo.query), []);
    const utcDay = rollUp(utc, await dashboard.usageTotals({ ...utc.query, accountId: undefined }), []);
    expect(day.totals.requests).toBeLessThan(utcDay.totals.requests);
  });

  it('refuses an unknown zone, a reversed range and one too long for its interval', () => {
    expect(() => reportScope({ tz: 'Mars/Olympus' }, T0)).toThrow(/time zone/);
    expect(() => reportScope({ from: '2026-11-02', to: '2026-11-01' }, T0)).toThrow(/before/);
    expect(() => reportScope({ from: '2026-01-01', to: '2026-11-01', interval: 'hour' }, T0)).toThrow(
      /too long/,
    );
  });
});
