import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database.js';

let dir: string;
let db: TestDatabase;
let env: Record<string, string>;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-cli-codes-'));
  db = await createTestDatabase(dir, 'codes.db');
  env = { DATABASE_URL: db.url, LOG_LEVEL: 'silent' };
  expect((await runCli(['migrate', '--json'], env)).code).toBe(0);
  expect((await runCli(['accounts', 'create', '--email', 'buyer@example.test', '--json'], env)).code).toBe(0);
});
afterAll(async () => {
  await db.drop();
  rmSync(dir, { recursive: true, force: true });
});

function json(stdout: string): Record<string, unknown> {
  const lines = stdout.trim().split('\n');
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0] as string) as Record<string, unknown>;
}

describe('bin/tollgate codes', () => {
  it('create --json prints the batch and its codes once; list counts; redeem credits once', async () => {
    const created = await runCli(
      [
        'codes',
        'create',
        '--amount',
        '12.5',
        '--count',
        '3',
        '--expires',
        '2999-01-01',
        '--note',
        'gift',
        '--json',
      ],
      env,
    );
    expect(created.code).toBe(0);
    const out = json(created.stdout);
    const codes = out.codes as string[];
    expect(codes).toHaveLength(3);
    const batch = out.batch as Record<string, unknown>;
    expect(batch).toMatchObject({
      amount: 12.5,
      note: 'gift',
      created: 3,
      redeemed: 0,
      expired: 0,
      expires_at: '2999-01-01T00:00:00.000Z',
    });

    const redeemed = await runCli(
      ['codes', 'redeem', '--email', 'buyer@example.test', '--code', codes[0] as string, '--json'],
      env,
    );
    expect(redeemed.code).toBe(0);
    expect(json(redeemed.stdout)).toMatchObject({
      object: 'credit',
      amount: 12.5,
      balance: 12.5,
      batch_id: batch.id,
    });

    const again = await runCli(
      ['codes', 'redeem', '--email', 'buyer@example.test', '--code', codes[0] as string, '--json'],
      env,
    );
    expect(again.code).toBe(1);
    expect(again.stdout).toBe('');
    expect(JSON.parse(again.stderr)).toMatchObject({ error: { code: 'invalid_code' } });

    const list = await runCli(['codes', 'list', '--json'], env);
    expect(list.code).toBe(0);
    expect(json(list.stdout)).toEqual({
      batches: [expect.objectContaining({ id: batch.id, created: 3, redeemed: 1 })],
    });
    const human = await runCli(['codes', 'list'], env);
    expect(human.stdout).toContain(`${batch.id}  $12.5  1/3 redeemed`);

    const check = await runCli(['ledger', 'check', '--json'], env);
    expect(check.code).toBe(0);
    expect(json(check.stdout)).toMatchObject({ ok: true });
  });

  it('refuses bad options with usage errors (exit 2) on stderr', async () => {
    for (const [args, option] of [
      [['--count', '1'], '--amount'],
      [['--amount', '1'], '--count'],
      [['--amount', '0', '--count', '1'], '--amount'],
      [['--amount', '1', '--count', '1001'], '--count'],
      [['--amount', '1', '--count', 'x'], '--count'],
      [['--amount', '1', '--count', '1', '--expires', '2001-01-01'], '--expires'],
      [['--amount', '1', '--count', '1', '--email', 'a@b.c'], '--email'],
    ] as const) {
      const r = await runCli(['codes', 'create', ...args, '--json'], env);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stdout).toBe('');
      const error = (JSON.parse(r.stderr) as { error: { code: string; message: string } }).error;
      expect(error.code).toBe('usage');
      expect(error.message).toContain(option);
    }
    const noCode = await runCli(['codes', 'redeem', '--email', 'buyer@example.test', '--json'], env);
    expect(noCode.code).toBe(2);
    const nobody = await runCli(
      ['codes', 'redeem', '--email', 'nobody@example.test', '--code', 'tg-x', '--json'],
      env,
    );
    expect(JSON.parse(nobody.stderr)).toMatchObject({ error: { code: 'account_not_found' } });
  });
});
