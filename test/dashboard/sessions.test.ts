import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { csrfTokenOf, SessionManager, sessionIdOf } from '../../src/auth/sessions.js';
import type { DashboardStore } from '../../src/store/dashboard-types.js';
import { openStore } from '../../src/store/index.js';
import type { Store } from '../../src/store/types.js';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database.js';

const MINUTE = 60_000;
let dir: string;
let db: TestDatabase;
let store: Store;
let dash: DashboardStore;
let now: number;
let sessions: SessionManager;
let accountId: string;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-sessions-'));
  now = 1_700_000_000_000;
  db = await createTestDatabase(dir);
  store = await openStore(db.url, {
    sqliteSynchronous: 'NORMAL',
    now: () => now,
  });
  await store.migrate();
  dash = store.dashboard(() => now);
  sessions = new SessionManager(dash, { idleTimeoutMs: 30 * MINUTE, maxAgeMs: 120 * MINUTE }, () => now);
  const created = await store.createAccount({ email: 'a@example.test', role: 'user', passwordHash: null });
  if (!created.ok) throw new Error('account');
  accountId = created.account.id;
});
afterEach(async () => {
  await store.close();
  await db.drop();
  rmSync(dir, { recursive: true, force: true });
});

describe('SessionManager', () => {
  it('gives each login a fresh 256-bit token and a CSRF token derived from it', async () => {
    const a = await sessions.start(accountId);
    const b = await sessions.start(accountId);
    expect(a.token).not.toBe(b.token);
    expect(Buffer.from(a.token, 'base64url')).toHaveLength(32);
    expect(a.csrfToken).toBe(csrfTokenOf(a.token));
    expect(a.csrfToken).not.toBe(a.token);
    expect(sessionIdOf(a.token)).not.toContain(a.token);
    expect((await sessions.resolve(a.token))?.csrfToken).toBe(a.csrfToken);
  });

  it('ends a session left idle longer than the idle timeout', async () => {
    const s = await sessions.start(accountId);
    now += 29 * MINUTE;
    expect(await sessions.resolve(s.token)).toBeDefined();
    now += 29 * MINUTE; // 29 min after the last use: still alive (the use restarted the idle clock)
    expect(await sessions.resolve(s.token)).toBeDefined();
    now += 30 * MINUTE;
    expect(await sessions.resolve(s.token)).toBeUndefined();
    // …and it stays gone.
    now -= 30 * MINUTE;
    expect(await sessions.resolve(s.token)).toBeUndefined();
  });

  it('ends a session at its absolute expiry however busy it is', async () => {
    const s = await sessions.start(accountId);
    const started = now;
    for (let i = 0; i < 11; i++) {
      now += 10 * MINUTE; // used every 10 minutes: never idle
      expect(await sessions.resolve(s.token)).toBeDefined();
    }
    now = started + 120 * MINUTE;
    expect(await sessions.resolve(s.token)).toBeUndefined();
  });

  it('refuses the sessions of a disabled account', async () => {
    const s = await sessions.start(accountId);
    await dash.setAccountStatus(accountId, 'disabled');
    expect(await sessions.resolve(s.token)).toBeUndefined();
  });

  it('purges expired and idle sessions', async () => {
    await sessions.start(accountId);
    const later = await (async () => {
      now += 20 * MINUTE;
      return sessions.start(accountId);
    })();
    now += 15 * MINUTE; // the first is idle 35 min, the second 15 min
    expect(await sessions.purge()).toBe(1);
    expect(await sessions.resolve(later.token)).toBeDefined();
  });
});
