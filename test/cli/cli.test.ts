import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-key.js';
import { openStore } from '../../src/store/index.js';
import { runCli } from '../helpers/cli.js';
import {
  createTestDatabase,
  TEST_DIALECT,
  TEST_REDIS_URL,
  TEST_USES_REDIS,
  type TestDatabase,
  testRedisPrefix,
} from '../helpers/test-database.js';

let dir: string;
let db: TestDatabase;
let env: Record<string, string>;
const redis = TEST_USES_REDIS ? testRedisPrefix() : undefined;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-cli-'));
  db = await createTestDatabase(dir, 'cli.db');
  env = {
    DATABASE_URL: db.url,
    LOG_LEVEL: 'silent',
    ...(redis ? { REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: redis.prefix } : {}),
  };
});
afterAll(async () => {
  await db.drop();
  await redis?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

function json(stdout: string): Record<string, unknown> {
  const lines = stdout.trim().split('\n');
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0] as string) as Record<string, unknown>;
}

describe('bin/tollgate (operator contract)', () => {
  it('migrate --json', async () => {
    const r = await runCli(['migrate', '--json'], env);
    expect(r.code).toBe(0);
    expect(json(r.stdout)).toMatchObject({ ok: true, dialect: TEST_DIALECT });
  });

  it('accounts create --json, with a password on stdin; a second create of the same email fails', async () => {
    const r = await runCli(
      ['accounts', 'create', '--email', 'Ops@Example.test', '--password-stdin', '--admin', '--json'],
      env,
      'correct horse battery staple\n',
    );
    expect(r.code).toBe(0);
    expect(json(r.stdout)).toMatchObject({ email: 'ops@example.test', role: 'admin' });
    expect(r.stdout + r.stderr).not.toContain('correct horse');
    const again = await runCli(['accounts', 'create', '--email', 'ops@example.test', '--json'], env);
    expect(again.code).not.toBe(0);
    expect(again.stdout).toBe('');
    expect(JSON.parse(again.stderr).error.code).toBe('email_taken');
  });

  it('credits add accepts up to 9 decimal places and refuses more', async () => {
    const r = await runCli(
      [
        'credits',
        'add',
        '--email',
        'ops@example.test',
        '--amount',
        '12.000000001',
        '--note',
        'welcome',
        '--json',
      ],
      env,
    );
    expect(r.code).toBe(0);
    expect(json(r.stdout)).toMatchObject({ amount: 12.000000001, balance: 12.000000001 });
    for (const amount of ['1.0000000001', '-5', '0', 'abc', '1e3']) {
      const bad = await runCli(['credits', 'add', '--email', 'ops@example.test', '--amount', amount], env);
      expect(bad.code).not.toBe(0);
      expect(bad.stderr).toMatch(/amount/);
    }
  });

  it('keys create prints {"id","name","key"} once; only its hash is stored; list and revoke work', async () => {
    const r = await runCli(
      ['keys', 'create', '--email', 'ops@example.test', '--name', 'ci key', '--json'],
      env,
    );
    expect(r.code).toBe(0);
    const created = json(r.stdout);
    expect(Object.keys(created).sort()).toEqual(['id', 'key', 'name']);
    expect(created.name).toBe('ci key');
    expect(created.key).toMatch(/^sk-svc-[0-9a-f]{32}$/);

    const list = await runCli(['keys', 'list', '--email', 'ops@example.test', '--json'], env);
    expect(list.code).toBe(0);
    expect(list.stdout).not.toContain(created.key as string);
    const keys = json(list.stdout).keys as Array<Record<string, unknown>>;
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatchObject({ id: created.id, name: 'ci key', revoked_at: null });
    expect(keys[0]?.hint).toMatch(/^sk-svc-[0-9a-f]{4}…[0-9a-f]{4}$/);

    const store = await openStore(env.DATABASE_URL as string);
    const record = await store.findKeyByHash(hashApiKey(created.key as string));
    expect(record?.keyId).toBe(created.id);
    await store.close();

    // With Redis, the revocation is also announced to every running instance (their caches drop it at once).
    const heard = redis ? listenForEvents(`${redis.prefix}events`) : undefined;
    await heard?.ready;
    const revoke = await runCli(
      ['keys', 'revoke', '--email', 'ops@example.test', '--id', created.id as string, '--json'],
      env,
    );
    expect(revoke.code).toBe(0);
    expect(json(revoke.stdout)).toMatchObject({ id: created.id, revoked: true });
    if (heard) {
      expect(await heard.first()).toMatchObject({ event: { kind: 'key_revoked', keyId: created.id } });
      heard.close();
    }
    const missing = await runCli(['keys', 'revoke', '--email', 'ops@example.test', '--id', 'key_nope'], env);
    expect(missing.code).not.toBe(0);
  });

  it('keys create refuses the 11th active key', { timeout: 90_000 }, async () => {
    for (let i = 0; i < 10; i++) {
      const r = await runCli(
        ['keys', 'create', '--email', 'ops@example.test', '--name', `k${i}`, '--json'],
        env,
      );
      expect(r.code).toBe(0);
    }
    const eleventh = await runCli(
      ['keys', 'create', '--email', 'ops@example.test', '--name', 'k10', '--json'],
      env,
    );
    expect(eleventh.code).not.toBe(0);
    expect(JSON.parse(eleventh.stderr).error.code).toBe('limit_reached');
  });

  it(
    "keys create and update take a key's controls (--rpm and --tpm among them); keys list shows them",
    { timeout: 90_000 },
    async () => {
      const email = 'limits@example.test';
      expect((await runCli(['accounts', 'create', '--email', email, '--json'], env)).code).toBe(0);
      const r = await runCli(
        [
          'keys',
          'create',
          '--email',
          email,
          '--name',
          'ci',
          '--limit',
          '5',
          '--limit-reset',
          'monthly',
          '--expires',
          '2099-01-01T00:00:00Z',
          '--allow',
          'prov-qwen,gemini-2.5-flash',
          '--rpm',
          '30',
          '--tpm',
          '20000',
          '--json',
        ],
        env,
      );
      expect(r.code, r.stderr).toBe(0);
      const created = json(r.stdout);
      expect(created).toMatchObject({
        limit: 5,
        limit_reset: 'monthly',
        spent_in_window: 0,
        remaining: 5,
        expires_at: '2099-01-01T00:00:00.000Z',
        allowed: ['prov-qwen', 'gemini-2.5-flash'],
        rpm: 30,
        tpm: 20000,
      });
      const id = created.id as string;
      const updated = await runCli(
        ['keys', 'update', '--email', email, '--id', id, '--rpm', '12', '--tpm', 'none', '--json'],
        env,
      );
      expect(updated.code, updated.stderr).toBe(0);
      expect(json(updated.stdout)).toMatchObject({
        id,
        limit: 5,
        rpm: 12,
        tpm: null,
        allowed: ['prov-qwen', 'gemini-2.5-flash'],
      });
      // Each process takes a second or more on a loaded machine: the list is read as text, its JSON is
      // the same rows as the answers above (`controlsRow`).
      const shown = await runCli(['keys', 'list', '--email', email], env);
      expect(shown.stdout).toContain('limit $5 monthly, spent $0, left $5');
      expect(shown.stdout).toContain('12 rpm');
      expect(shown.stdout).not.toContain('tpm');
      expect(shown.stdout).toContain('expires 2099-01-01');
      const refused = await runCli(['keys', 'update', '--email', email, '--id', id, '--tpm', '1.5'], env);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain('--tpm must be a positive whole number or none');
    },
  );

  it('ledger check --json reports ok', async () => {
    const r = await runCli(['ledger', 'check', '--json'], env);
    expect(r.code).toBe(0);
    expect(json(r.stdout)).toMatchObject({ ok: true, accounts: 2, problems: [] });
  });

  it('usage errors exit 2 with a message on stderr', async () => {
    for (const args of [
      ['frobnicate'],
      ['keys', 'create', '--email', 'ops@example.test'],
      ['credits', 'add', '--bogus', 'x'],
    ]) {
      const r = await runCli(args, env);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/^tollgate: /);
      expect(r.stdout).toBe('');
    }
  });

  it('an unreachable PostgreSQL fails fast, without showing the password of DATABASE_URL', async () => {
    const started = Date.now();
    const r = await runCli(['migrate', '--json'], {
      DATABASE_URL: 'postgres://tollgate:s3cret-pass@127.0.0.1:1/tollgate',
      DATABASE_CONNECT_TIMEOUT_MS: '1000',
    });
    expect(r.code).not.toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(r.stdout + r.stderr).not.toContain('s3cret-pass');
    expect(JSON.parse(r.stderr).error.message).toMatch(/database/i);
  });

  it('invalid configuration names the variable and exits non-zero', async () => {
    const r = await runCli(['migrate'], { ...env, PROV_CLAUDE_INPUT_PRICE: 'three dollars' });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('PROV_CLAUDE_INPUT_PRICE');
  });
});

/** Subscribes to the instances' event channel, as a running gateway does. */
function listenForEvents(channel: string) {
  const subscriber = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 1 });
  const messages: unknown[] = [];
  let wake: () => void = () => {};
  subscriber.on('message', (_channel: string, message: string) => {
    messages.push(JSON.parse(message));
    wake();
  });
  return {
    ready: subscriber.subscribe(channel),
    async first(timeoutMs = 5_000): Promise<unknown> {
      if (messages.length === 0) {
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`nothing published on ${channel}`)), timeoutMs);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
      return messages[0];
    },
    close: () => subscriber.disconnect(),
  };
}
