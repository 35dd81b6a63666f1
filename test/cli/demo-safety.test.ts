import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyPassword } from '../../src/auth/passwords.js';
import { openStore } from '../../src/store/index.js';
import { exitWithin, linkBin, runIn, shellIn, startIn } from './cli-process.js';

// The demo creates an admin with credit and prints its password: it must never do that in a database it
// did not create — neither the one an exported DATABASE_URL names, nor one handed to it with --database.

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-demo-safety-'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** A working directory of its own, with `bin/tollgate` in it as in a checkout. */
function workdir(name: string): string {
  const cwd = join(dir, name);
  mkdirSync(cwd);
  linkBin(cwd);
  return cwd;
}

/** An operator's database: migrated, with one real admin account that has credit. */
async function realDatabase(file: string, extraEmails: string[] = []): Promise<string> {
  const store = await openStore(`sqlite:${file}`);
  try {
    await store.migrate();
    for (const email of ['owner@real.example', ...extraEmails]) {
      const created = await store.createAccount({ email, role: 'admin', passwordHash: null });
      if (!created.ok) throw new Error(email);
      await store.addCredit({ accountId: created.account.id, amountNano: 7_000_000_000, note: null });
    }
  } finally {
    await store.close();
  }
  return file;
}

async function emailsIn(file: string): Promise<string[]> {
  const store = await openStore(`sqlite:${file}`);
  try {
    const accounts = await store.dashboard().listAccounts({ limit: 100 });
    return accounts.map((a) => a.email).sort();
  } finally {
    await store.close();
  }
}

const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

describe('bin/tollgate demo never touches a database it did not create', () => {
  it('ignores an exported DATABASE_URL, says so, and runs on ./data/demo.db', async () => {
    const cwd = workdir('exported');
    const real = await realDatabase(join(dir, 'exported-real.db'));
    const before = sha256(real);
    const demo = await startIn(
      cwd,
      ['demo', '--json'],
      { DATABASE_URL: `sqlite:${real}`, PORT: '0' },
      /\{"url".*\}\n/,
    );
    try {
      const info = JSON.parse(demo.match[0]) as { database: string; email: string };
      expect(info.database).toBe('sqlite:./data/demo.db');
      expect(demo.output()).toContain('The demo does not use DATABASE_URL');
      expect(existsSync(join(cwd, 'data', 'demo.db'))).toBe(true);
    } finally {
      demo.child.kill('SIGTERM');
      expect(await exitWithin(demo.child, 15_000)).toBe(0);
    }
    expect(await emailsIn(real)).toEqual(['owner@real.example']);
    expect(sha256(real)).toBe(before);
  }, 60_000);

  it('refuses, with a non-zero exit and before writing anything, a database with accounts of its own', async () => {
    const cwd = workdir('refused');
    const real = await realDatabase(join(dir, 'given-real.db'));
    // Also one the old demo already wrote its account into: the operator's accounts came first.
    const tainted = await realDatabase(join(dir, 'tainted.db'), ['demo@tollgate.local']);
    for (const file of [real, tainted]) {
      const before = sha256(file);
      const emails = await emailsIn(file);
      const r = await runIn(cwd, ['demo', '--database', `sqlite:${file}`, '--json'], { PORT: '0' });
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      const error = JSON.parse(r.stderr.trim().split('\n').at(-1) ?? '{}') as {
        error: { code: string; message: string };
      };
      expect(error.error.code).toBe('not_a_demo_database');
      expect(error.error.message).toContain('accounts the demo did not create');
      expect(r.ms).toBeLessThan(10_000);
      expect(sha256(file)).toBe(before);
      expect(await emailsIn(file)).toEqual(emails);
    }
    expect(existsSync(join(cwd, 'data'))).toBe(false);
  }, 60_000);

  it('a second demo on the same database refuses, and names --database (the demo ignores DATABASE_URL)', async () => {
    const cwd = workdir('twice');
    const first = await startIn(cwd, ['demo', '--json'], { PORT: '0' }, /\{"url".*\}\n/);
    try {
      const r = await runIn(cwd, ['demo', '--json'], { PORT: '0' });
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      const error = JSON.parse(r.stderr.trim().split('\n').at(-1) ?? '{}') as {
        error: { code: string; message: string };
      };
      expect(error.error.code).toBe('database_in_use');
      expect(error.error.message).toContain(join(realpathSync(cwd), 'data', 'demo.db'));
      expect(error.error.message).toContain('--database sqlite:./data/demo-2.db');
      expect(error.error.message).not.toContain('DATABASE_URL');
    } finally {
      first.child.kill('SIGTERM');
      expect(await exitWithin(first.child, 15_000)).toBe(0);
    }
  }, 60_000);

  it('prints hints that work as printed: the password reset reaches the demo database, not ./data/tollgate.db', async () => {
    const cwd = workdir('hints');
    const first = await startIn(cwd, ['demo', '--json'], { PORT: '0' }, /\{"url".*\}\n/);
    first.child.kill('SIGTERM');
    expect(await exitWithin(first.child, 15_000)).toBe(0);
    // Someone signed up in the demo's dashboard: still the demo's database.
    const store = await openStore(`sqlite:${join(cwd, 'data', 'demo.db')}`);
    expect(
      (await store.createAccount({ email: 'visitor@example.test', role: 'user', passwordHash: null })).ok,
    ).toBe(true);
    await store.close();

    const second = await startIn(cwd, ['demo'], { PORT: '0' }, /Press Ctrl\+C to stop\.\n/);
    try {
      const out = second.output();
      const hint = out.match(
        /^\s+(DATABASE_URL=\S+ bin\/tollgate accounts password --email demo@tollgate\.local)$/m,
      );
      expect(hint, out).not.toBeNull();
      const reset = await shellIn(cwd, hint?.[1] ?? '', {});
      expect(reset.stderr).toBe('');
      expect(reset.code).toBe(0);
      const password = reset.stdout.match(/Password \(shown once\): (\S+)/)?.[1];
      expect(password).toBeDefined();
      expect(existsSync(join(cwd, 'data', 'tollgate.db'))).toBe(false);
      const check = await openStore(`sqlite:${join(cwd, 'data', 'demo.db')}`);
      const login = await check.dashboard().findLogin('demo@tollgate.local');
      await check.close();
      expect(await verifyPassword(login?.passwordHash ?? '', password ?? '')).toBe(true);

      // The SDK line of the README: the key exported as printed is the demo's key.
      const key = out.match(/API key \(shown once\): (sk-svc-\w+)/)?.[1];
      expect(out).toContain(`export TOLLGATE_KEY=${key}`);
    } finally {
      second.child.kill('SIGTERM');
      expect(await exitWithin(second.child, 15_000)).toBe(0);
    }
  }, 90_000);
});
