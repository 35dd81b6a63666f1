import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.js';
import { sqlitePathOf } from '../../src/store/sqlite/open.js';
import { runCli } from '../helpers/cli.js';
import { type Harness, hello, startHarness } from '../helpers/harness.js';

let h: Harness;
let out: string;
let env: Record<string, string>;
beforeAll(async () => {
  h = await startHarness();
  out = mkdtempSync(join(tmpdir(), 'tollgate-backup-'));
  env = { DATABASE_URL: h.config.databaseUrl, LOG_LEVEL: 'silent' };
});
afterAll(async () => {
  await h.close();
  rmSync(out, { recursive: true, force: true });
});

function oneJson(stdout: string): Record<string, unknown> {
  const lines = stdout.trim().split('\n');
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0] as string) as Record<string, unknown>;
}

describe('bin/tollgate backup', () => {
  it('copies a live database while requests are served; the copy opens and its ledger checks out', async () => {
    for (let i = 0; i < 5; i++) expect((await h.chat({ ...hello, provider: 'prov-qwen' })).status).toBe(200);

    // Keep the server settling requests (holds, charges, usage rows) for the whole backup.
    let stop = false;
    let servedDuring = 0;
    const traffic = (async () => {
      while (!stop) {
        const res = await h.chat({ ...hello, provider: 'prov-deepseek' });
        expect(res.status).toBe(200);
        servedDuring += 1;
      }
    })();
    const dest = join(out, 'live.db');
    const r = await runCli(['backup', dest, '--json'], env);
    stop = true;
    await traffic;

    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const printed = oneJson(r.stdout);
    expect(printed).toEqual({
      ok: true,
      source: sqlitePathOf(h.config.databaseUrl),
      path: dest,
      bytes: statSync(dest).size,
    });
    expect(servedDuring).toBeGreaterThan(0);
    // Only the copy: no temporary file, no -wal/-shm left beside it.
    expect(readdirSync(out)).toEqual(['live.db']);

    const copy = await openStore(`sqlite:${dest}`);
    try {
      const report = await copy.ledgerCheck();
      expect(report).toEqual({
        ok: true,
        accounts: 1,
        problems: [],
        shortfalls: [],
        shortfallAllowanceNano: 0,
      });
      const copied = await copy.listUsage(h.accountId, { limit: 10_000 });
      const live = await h.server.store.listUsage(h.accountId, { limit: 10_000 });
      // Everything committed before the backup started is in it; the copy is a prefix of the live history.
      expect(copied.length).toBeGreaterThanOrEqual(5);
      expect(copied.length).toBeLessThanOrEqual(live.length);
      const liveIds = new Set(live.map((u) => u.requestId));
      for (const u of copied) expect(liveIds.has(u.requestId)).toBe(true);
      // Charges only grow, so balance + open holds (a request caught mid-flight holds money) cannot be
      // lower in the copy than in the live database now that traffic has stopped.
      const copiedBalance = (await copy.getAccount(h.accountId))?.balanceNano ?? 0;
      const copiedHolds = await copy.openHoldsNano(h.accountId);
      expect(await h.server.store.openHoldsNano(h.accountId)).toBe(0);
      expect(copiedBalance + copiedHolds).toBeGreaterThanOrEqual(await h.balanceNano());
    } finally {
      await copy.close();
    }
  });

  it('refuses to replace an existing file (or a stale -wal beside it) unless --force', async () => {
    const dest = join(out, 'existing.db');
    writeFileSync(dest, 'not a database');
    const refused = await runCli(['backup', dest, '--json'], env);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(JSON.parse(refused.stderr)).toMatchObject({ error: { code: 'destination_exists' } });
    expect(readFileSync(dest, 'utf8')).toBe('not a database');

    const stale = join(out, 'stale.db');
    writeFileSync(`${stale}-wal`, 'stale write-ahead log');
    const staleRefused = await runCli(['backup', stale, '--json'], env);
    expect(JSON.parse(staleRefused.stderr)).toMatchObject({ error: { code: 'destination_exists' } });
    expect(existsSync(stale)).toBe(false);

    const forced = await runCli(['backup', dest, '--force', '--json'], env);
    expect(forced.stderr).toBe('');
    expect(forced.code).toBe(0);
    expect(oneJson(forced.stdout)).toMatchObject({ ok: true, path: dest, bytes: statSync(dest).size });
    const copy = await openStore(`sqlite:${dest}`);
    try {
      expect((await copy.ledgerCheck()).ok).toBe(true);
    } finally {
      await copy.close();
    }
  });

  it('prints a human line without --json', async () => {
    const dest = join(out, 'human.db');
    const r = await runCli(['backup', dest], env);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(
      `Backed up ${sqlitePathOf(h.config.databaseUrl)} to ${dest} (${statSync(dest).size} bytes, quick_check ok).`,
    );
  });

  it('fails clearly without a file, without a database, or on PostgreSQL', async () => {
    const usage = await runCli(['backup', '--json'], env);
    expect(usage.code).toBe(2);
    expect(JSON.parse(usage.stderr)).toMatchObject({ error: { code: 'usage' } });

    const nothing = join(out, 'from-nothing.db');
    const missing = await runCli(['backup', nothing, '--json'], {
      ...env,
      DATABASE_URL: `sqlite:${join(out, 'no-such.db')}`,
    });
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.stderr)).toMatchObject({ error: { code: 'no_database' } });
    expect(existsSync(nothing)).toBe(false);
    expect(existsSync(join(out, 'no-such.db'))).toBe(false);

    const pg = await runCli(['backup', join(out, 'pg.db'), '--json'], {
      ...env,
      DATABASE_URL: 'postgres://tollgate:s3cret-pw@127.0.0.1:1/tollgate',
    });
    expect(pg.code).toBe(1);
    const error = (JSON.parse(pg.stderr) as { error: { code: string; message: string } }).error;
    expect(error.code).toBe('unsupported_database');
    expect(error.message).toContain('pg_dump');
    expect(pg.stderr).not.toContain('s3cret-pw');
  });
});
