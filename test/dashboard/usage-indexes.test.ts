import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DashboardStore } from '../../src/store/dashboard-store.js';
import { KyselyStore } from '../../src/store/kysely-store.js';
import type { Database } from '../../src/store/schema.js';

/**
 * The usage pages must stay fast on a large table: every query they run on `usage` is answered through
 * an index (SQLite's EXPLAIN QUERY PLAN says SEARCH … USING INDEX), never by scanning the table.
 */
let dir: string;
let sqlite: SQLite.Database;
let db: Kysely<Database>;
const queries: { sql: string; parameters: readonly unknown[] }[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-plan-'));
  sqlite = new SQLite(join(dir, 'db.sqlite'));
  db = new Kysely<Database>({
    dialect: new SqliteDialect({ database: sqlite }),
    log: (event) => {
      if (event.level === 'query') queries.push(event.query);
    },
  });
  await new KyselyStore(db, 'sqlite').migrate();
});
afterAll(async () => {
  await db.destroy();
  rmSync(dir, { recursive: true, force: true });
});

function plansOfUsage(): string[] {
  const plans: string[] = [];
  for (const q of queries.filter((x) => /from "usage"/.test(x.sql))) {
    const rows = sqlite.prepare(`EXPLAIN QUERY PLAN ${q.sql}`).all(...(q.parameters as unknown[])) as {
      detail: string;
    }[];
    plans.push(...rows.map((r) => r.detail).filter((d) => /\busage\b/.test(d)));
  }
  return plans;
}

describe('usage queries use indexes', () => {
  it('for pages, filters, cursors, day totals, per-key spend and provider error rates', async () => {
    const store = new DashboardStore(db);
    queries.length = 0;
    const cursor = { createdAt: 1_700_000_000_000, requestId: 'chatcmpl-x' };
    await store.usagePage('acct_a', {}, { limit: 51 });
    await store.usagePage('acct_a', {}, { limit: 51, cursor });
    await store.usagePage('acct_a', { keyId: 'key_a' }, { limit: 51, cursor });
    await store.usagePage('acct_a', { provider: 'prov-qwen', status: 'ok' }, { limit: 51 });
    await store.usagePage('acct_a', { from: 1, to: 2 }, { limit: 51 });
    await store.usageDaily('acct_a', { from: 1, to: 2 });
    await store.usageDaily('acct_a', { from: 1, to: 2 }, 'key_a');
    await store.listKeysWithSpend('acct_a');
    await store.providerTraffic(1);
    const plans = plansOfUsage();
    expect(plans.length).toBeGreaterThanOrEqual(9);
    // A cursor seeks within the index instead of walking every newer row.
    expect(plans.filter((d) => /\(account_id=\?( AND key_id=\?)? AND created_at<\?\)$/.test(d))).toHaveLength(
      2,
    );
    for (const detail of plans) {
      expect(detail, detail).toMatch(/^SEARCH usage USING (COVERING )?INDEX /);
    }
  });
});
