import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.js';
import { windowEnd } from '../../src/store/key-window-rules.js';
import type { PlaceHoldResult, Store } from '../../src/store/types.js';
import { createTestDatabase, TEST_DIALECT, type TestDatabase } from '../helpers/test-database.js';
import { fundedAccount, usageRow } from './store-fixtures.js';

let dir: string;
let db: TestDatabase;
let store: Store;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-key-limit-'));
  db = await createTestDatabase(dir, 'db.sqlite');
  store = await openStore(db.url, { sqliteSynchronous: 'NORMAL' });
  await store.migrate();
});
afterEach(async () => {
  await store.close();
  await db.drop();
  rmSync(dir, { recursive: true, force: true });
});

// A Monday 00:00 UTC after the keys' creation (their windows start now): a day and a week boundary, and
// the last second of the Sunday before it.
const AFTER = windowEnd('weekly', Date.now() + 7 * 86_400_000) as number;
const BEFORE = AFTER - 1_000;

async function limitedKey(limitNano: number, limitReset: 'daily' | 'weekly' | 'monthly' | 'never') {
  const accountId = await fundedAccount(store, 1_000_000);
  const created = await store.createApiKey({
    accountId,
    name: 'k',
    keyHash: `h${Math.random()}`,
    hint: 'sk-svc-…',
    maxActive: 10,
    controls: { limitNano, limitReset },
  });
  if (!created.ok) throw new Error('key');
  return { accountId, keyId: created.key.id };
}

let n = 0;
function holdAt(accountId: string, keyId: string, amountNano: number, at: number): Promise<PlaceHoldResult> {
  n += 1;
  return store.placeHold({
    holdId: `hold_${n}`,
    accountId,
    keyId,
    requestId: `req_${n}`,
    amountNano,
    owner: 'test',
    createdAt: at,
    expiresAt: at + 600_000,
  });
}

describe(`a key limit's window at its reset boundary (${TEST_DIALECT})`, () => {
  it('a charge counts in its hold’s window: nothing charged to the next one, and no double window', async () => {
    const { accountId, keyId } = await limitedKey(100, 'daily');
    const first = await holdAt(accountId, keyId, 80, BEFORE);
    expect(first.ok).toBe(true);
    const firstId = `hold_${n}`;
    const keyWindow = first.ok ? first.keyWindow : undefined;
    expect(keyWindow).toBe(AFTER - 86_400_000);
    // Same window: 20 left.
    const refused = await holdAt(accountId, keyId, 30, BEFORE + 500);
    expect(refused).toMatchObject({
      ok: false,
      reason: 'key_limit_exceeded',
      key: { limitNano: 100, remainingNano: 20, resetsAt: AFTER },
    });
    // Past the boundary the window is new: the whole limit, at once (no cron, no gap).
    const next = await holdAt(accountId, keyId, 100, AFTER);
    expect(next).toEqual({ ok: true, keyWindow: AFTER });
    // The first hold settles after the boundary: its charge counts in its own (ended) window.
    await store.settle({
      holdId: firstId,
      accountId,
      holdAmountNano: 80,
      costNano: 70,
      keyId,
      keyWindow: keyWindow ?? null,
      usage: usageRow(accountId, 'req_first', { keyId, createdAt: BEFORE, inputCostNano: 70 }),
    });
    const key = await store.getApiKey(accountId, keyId);
    expect(key?.window).toEqual({ windowStart: AFTER, spentNano: 0, heldNano: 100 });
    // An instance whose clock is behind cannot bring the ended window back.
    const late = await holdAt(accountId, keyId, 1, BEFORE + 900);
    expect(late).toMatchObject({ ok: false, reason: 'key_limit_exceeded' });
    const report = await store.ledgerCheck();
    expect(report.problems).toEqual([]);
  });

  it('settles and releases give back to the window; the limit is never passed; a release of an ended window changes nothing', async () => {
    const { accountId, keyId } = await limitedKey(100, 'weekly');
    const a = await holdAt(accountId, keyId, 60, BEFORE - 1_000);
    const aId = `hold_${n}`;
    expect(a.ok).toBe(true);
    await store.release({
      holdId: aId,
      accountId,
      holdAmountNano: 60,
      usage: null,
      keyId,
      keyWindow: a.ok ? (a.keyWindow ?? null) : null,
    });
    const b = await holdAt(accountId, keyId, 100, BEFORE);
    expect(b.ok).toBe(true);
    const bId = `hold_${n}`;
    await store.settle({
      holdId: bId,
      accountId,
      holdAmountNano: 100,
      costNano: 100,
      keyId,
      keyWindow: b.ok ? (b.keyWindow ?? null) : null,
      usage: usageRow(accountId, 'req_b', { keyId, createdAt: BEFORE, inputCostNano: 100 }),
    });
    expect((await store.getApiKey(accountId, keyId))?.window.spentNano).toBe(100);
    expect(await holdAt(accountId, keyId, 1, BEFORE)).toMatchObject({
      ok: false,
      reason: 'key_limit_exceeded',
    });
    // Monday 00:00 UTC: a new week.
    expect(await holdAt(accountId, keyId, 100, AFTER)).toEqual({ ok: true, keyWindow: AFTER });
    expect(await store.releaseHolds({ kind: 'all' })).toBe(1);
    expect((await store.getApiKey(accountId, keyId))?.window).toEqual({
      windowStart: AFTER,
      spentNano: 0,
      heldNano: 0,
    });
    expect((await store.ledgerCheck()).problems).toEqual([]);
  });

  it('a limit set later counts the window’s charges so far', async () => {
    const accountId = await fundedAccount(store, 1_000_000);
    const created = await store.createApiKey({
      accountId,
      name: 'k',
      keyHash: `h${Math.random()}`,
      hint: 'x',
      maxActive: 10,
    });
    if (!created.ok) throw new Error('key');
    const keyId = created.key.id;
    await store.recordUsage(
      usageRow(accountId, 'old', { keyId, createdAt: Date.now() - 1_000, inputCostNano: 40 }),
    );
    const updated = await store.updateApiKey(accountId, keyId, { limitNano: 50, limitReset: 'never' });
    expect(updated?.controls).toMatchObject({ limitNano: 50, limitReset: 'never' });
    expect(updated?.window.windowStart).toBe(0);
  });
});
