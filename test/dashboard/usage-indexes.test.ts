import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateDatabase } from '../../src/store/migrations.js';
import type { Database } from '../../src/store/schema.js';
import { composeDashboard } from '../../src/store/shared/compose-dashboard.js';

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
  await migrateDatabase(db);
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
    const store = composeDashboard(db);
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
      // Migration 0009: an account's rows have one index; the providers page reads the one by time.
      expect(detail, detail).toMatch(
        /USING (COVERING )?INDEX (usage_account_time \(account_id=|usage_created )/,
      );
    }
  });

  it('test a key or provider filter on the index entry, before the row is read', async () => {
    const store = composeDashboard(db);
    const indexes = sqlite
      .prepare("select name, rootpage from sqlite_master where type = 'index' and tbl_name = 'usage'")
      .all() as { name: string; rootpage: number }[];
    expect(indexes.map((i) => i.name).sort()).toEqual([
      'sqlite_autoindex_usage_1',
      'usage_account_time',
      'usage_created',
    ]);
    const root = indexes.find((i) => i.name === 'usage_account_time')?.rootpage;
    // The index's columns: account_id, created_at, key_id, provider.
    for (const [filters, column] of [
      [{ keyId: 'key_a' }, 2],
      [{ provider: 'prov-qwen' }, 3],
    ] as const) {
      queries.length = 0;
      await store.usagePage('acct_a', filters, { limit: 51 });
      const page = queries.find((q) => /from "usage"/.test(q.sql));
      if (!page) throw new Error('no usage query');
      const program = sqlite.prepare(`EXPLAIN ${page.sql}`).all(...(page.parameters as unknown[])) as {
        opcode: string;
        p1: number;
        p2: number;
      }[];
      const cursor = program.find((op) => op.opcode === 'OpenRead' && op.p2 === root)?.p1;
      expect(cursor, 'the page reads usage_account_time').toBeDefined();
      // SQLite seeks the table row lazily (DeferredSeek) and first reads the filtered column from the
      // index entry: a row that does not match is never read.
      const seek = program.findIndex((op) => op.opcode === 'DeferredSeek' && op.p1 === cursor);
      expect(seek).toBeGreaterThan(-1);
      const firstRead = program.slice(seek + 1).find((op) => op.opcode === 'Column');
      expect(firstRead).toMatchObject({ p1: cursor, p2: column });
    }
  });
});
