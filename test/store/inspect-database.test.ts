import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkDemoDatabase } from '../../src/cli/demo-database.js';
import { openStore } from '../../src/store/index.js';
import { inspectDatabase } from '../../src/store/inspect-database.js';
import { createTestDatabase, TEST_DIALECT, type TestDatabase } from '../helpers/test-database.js';

const DEMO = 'demo@tollgate.local';

let dir: string;
let db: TestDatabase;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-inspect-'));
  db = await createTestDatabase(dir, 'db.sqlite');
});
afterEach(async () => {
  await db.drop();
  rmSync(dir, { recursive: true, force: true });
});

/** Migrates the database and creates each account at its own time (ms since the epoch). */
async function accountsAt(accounts: Array<[email: string, createdAt: number]>): Promise<void> {
  let clock = 0;
  const store = await openStore(db.url, { sqliteSynchronous: 'NORMAL', now: () => clock });
  try {
    await store.migrate();
    for (const [email, createdAt] of accounts) {
      clock = createdAt;
      const created = await store.createAccount({ email, role: 'user', passwordHash: null });
      if (!created.ok) throw new Error(email);
    }
  } finally {
    await store.close();
  }
}

const refusal = () => checkDemoDatabase(db.url, DEMO).then(() => 'accepted');

describe(`whose database it is (${TEST_DIALECT})`, () => {
  it('a migrated database without accounts is Tollgate’s, with no first account', async () => {
    await accountsAt([]);
    expect(await inspectDatabase(db.url)).toEqual({ kind: 'tollgate', firstEmails: [] });
    expect(await refusal()).toBe('accepted');
  });

  it('the oldest account is first; later sign-ups do not change that', async () => {
    await accountsAt([
      [DEMO, 1_000],
      ['visitor@example.test', 1_001],
    ]);
    expect(await inspectDatabase(db.url)).toEqual({ kind: 'tollgate', firstEmails: [DEMO] });
    expect(await refusal()).toBe('accepted');
  });

  it('an operator’s account before the demo’s: refused', async () => {
    await accountsAt([
      ['owner@real.example', 1_000],
      [DEMO, 1_001],
    ]);
    expect(await inspectDatabase(db.url)).toEqual({ kind: 'tollgate', firstEmails: ['owner@real.example'] });
    await expect(refusal()).rejects.toMatchObject({ code: 'not_a_demo_database' });
  });

  // Ids are random: which of two accounts of one millisecond came first cannot be told, so the database is
  // refused whichever of them the demo's is, and whatever their ids. Both orders of creation are tried.
  it.each([
    ['the operator’s first', ['owner@real.example', DEMO]],
    ['the demo’s first', [DEMO, 'owner@real.example']],
  ])('an operator’s account in the same millisecond as the demo’s (%s): refused', async (_, emails) => {
    await accountsAt(emails.map((email) => [email, 1_000] as [string, number]));
    expect(await inspectDatabase(db.url)).toEqual({
      kind: 'tollgate',
      firstEmails: ['demo@tollgate.local', 'owner@real.example'],
    });
    await expect(refusal()).rejects.toMatchObject({ code: 'not_a_demo_database' });
  });
});
