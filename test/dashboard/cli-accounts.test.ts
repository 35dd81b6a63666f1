import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyPassword } from '../../src/auth/passwords.js';
import type { DashboardStore } from '../../src/store/dashboard-types.js';
import { openStore } from '../../src/store/index.js';
import { runCli } from '../helpers/cli.js';

// Runs bin/tollgate, i.e. the compiled dist/: `npm run build` first (npm test does).
let dir: string;
let env: Record<string, string>;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-cli-dash-'));
  env = { DATABASE_URL: `sqlite:${join(dir, 'cli.db')}`, LOG_LEVEL: 'silent' };
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

async function withDashboardStore<T>(fn: (store: DashboardStore) => Promise<T>) {
  const store = await openStore(env.DATABASE_URL as string);
  try {
    return await fn(store.dashboard());
  } finally {
    await store.close();
  }
}

describe('bin/tollgate accounts: dashboard logins', () => {
  it('accounts create --admin without --password-stdin prints a generated password once', async () => {
    const r = await runCli(['accounts', 'create', '--email', 'root@cli.test', '--admin', '--json'], env);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { role: string; password: string };
    expect(out.role).toBe('admin');
    expect(out.password).toMatch(/^[A-Za-z0-9_-]{24}$/);
    const login = await withDashboardStore((s) => s.findLogin('root@cli.test'));
    expect(login?.passwordHash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(await verifyPassword(login?.passwordHash ?? '', out.password)).toBe(true);
    const human = await runCli(['accounts', 'create', '--email', 'root2@cli.test', '--admin'], env);
    expect(human.stdout).toMatch(/Dashboard password \(shown once, change it after logging in\): \S{24}\n/);
  });

  it('accounts create for a user without --password-stdin sets no password', async () => {
    const r = await runCli(['accounts', 'create', '--email', 'api-only@cli.test', '--json'], env);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).password).toBeUndefined();
    expect((await withDashboardStore((s) => s.findLogin('api-only@cli.test')))?.passwordHash).toBeNull();
  });

  it('accounts password sets a password from stdin and ends every session of the account', async () => {
    const accountId = await withDashboardStore(async (s) => {
      const login = await s.findLogin('root@cli.test');
      if (!login) throw new Error('missing account');
      await s.createSession({
        id: 'a'.repeat(64),
        accountId: login.account.id,
        createdAt: 1,
        expiresAt: 9e15,
      });
      return login.account.id;
    });
    const r = await runCli(
      ['accounts', 'password', '--email', 'ROOT@cli.test', '--password-stdin', '--json'],
      env,
      'a new passphrase for root\n',
    );
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ id: accountId, email: 'root@cli.test' });
    expect(r.stdout + r.stderr).not.toContain('a new passphrase');
    await withDashboardStore(async (s) => {
      expect(await s.findSession('a'.repeat(64))).toBeUndefined();
      const login = await s.findLogin('root@cli.test');
      expect(await verifyPassword(login?.passwordHash ?? '', 'a new passphrase for root')).toBe(true);
    });
    const short = await runCli(
      ['accounts', 'password', '--email', 'root@cli.test', '--password-stdin'],
      env,
      'short\n',
    );
    expect(short.code).not.toBe(0);
    expect(short.stderr).toMatch(/at least 12 characters/);
    const generated = await runCli(['accounts', 'password', '--email', 'api-only@cli.test', '--json'], env);
    expect(JSON.parse(generated.stdout).password).toMatch(/^[A-Za-z0-9_-]{24}$/);
    const missing = await runCli(['accounts', 'password', '--email', 'nobody@cli.test'], env);
    expect(missing.code).not.toBe(0);
  });
});
