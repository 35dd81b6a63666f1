import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.js';
import type { Store, UsageRecord } from '../../src/store/types.js';

let dir: string;
let file: string;
let store: Store;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-store-'));
  file = join(dir, 'db.sqlite');
  store = await openStore(`sqlite:${file}`, { sqliteSynchronous: 'NORMAL' });
  await store.migrate();
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

async function account(credit: number) {
  const created = await store.createAccount({
    email: `a${Math.random()}@x.test`,
    role: 'user',
    passwordHash: null,
  });
  if (!created.ok) throw new Error('account');
  if (credit > 0) await store.addCredit({ accountId: created.account.id, amountNano: credit, note: null });
  return created.account.id;
}

function usage(accountId: string, requestId: string): UsageRecord {
  return {
    requestId,
    accountId,
    keyId: 'key_x',
    provider: 'prov-deepseek',
    model: 'm',
    promptTokens: 10,
    completionTokens: 5,
    usageEstimated: false,
    inputCostNano: 0,
    outputCostNano: 0,
    status: 'ok',
    errorCode: null,
    httpStatus: 200,
    durationMs: 1,
    clientGone: false,
    createdAt: Date.now(),
  };
}

const hold = (accountId: string, holdId: string, amountNano: number, expiresAt = Date.now() + 60_000) => ({
  holdId,
  accountId,
  requestId: `req-${holdId}`,
  amountNano,
  owner: 'inst_a',
  createdAt: Date.now(),
  expiresAt,
});

describe('store: money moves only through hold → settle / release, and the ledger always balances', () => {
  it('WAL mode and the chosen synchronous level are set on the file', async () => {
    const raw = new SQLite(file, { readonly: true });
    expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
    raw.close();
  });

  it('migrate is idempotent', async () => {
    await store.migrate();
    await store.migrate();
    expect((await store.ledgerCheck()).ok).toBe(true);
  });

  it('a hold larger than the balance changes nothing', async () => {
    const id = await account(1000);
    const refused = await store.placeHold(hold(id, 'h1', 1001));
    expect(refused).toEqual({ ok: false, reason: 'insufficient_balance', balanceNano: 1000 });
    expect(await store.openHoldsNano(id)).toBe(0);
    const ok = await store.placeHold(hold(id, 'h2', 1000));
    expect(ok).toEqual({ ok: true, balanceNano: 0 });
    expect(await store.openHoldsNano(id)).toBe(1000);
  });

  it('settle charges the actual cost and returns the rest of the hold', async () => {
    const id = await account(1000);
    await store.placeHold(hold(id, 'h1', 600));
    const settled = await store.settle({
      holdId: 'h1',
      accountId: id,
      costNano: 250,
      usage: usage(id, 'r1'),
    });
    expect(settled).toEqual({ balanceNano: 750, chargedNano: 250, shortfallNano: 0 });
    expect(await store.openHoldsNano(id)).toBe(0);
    expect((await store.ledgerCheck()).ok).toBe(true);
  });

  it('a cost above hold + balance stops at zero and records the shortfall', async () => {
    const id = await account(1000);
    await store.placeHold(hold(id, 'h1', 900));
    const settled = await store.settle({
      holdId: 'h1',
      accountId: id,
      costNano: 1500,
      usage: usage(id, 'r1'),
    });
    expect(settled).toEqual({ balanceNano: 0, chargedNano: 1000, shortfallNano: 500 });
    expect((await store.ledgerCheck()).ok).toBe(true);
  });

  it('a request id is settled at most once (the second settle fails and changes nothing)', async () => {
    const id = await account(1000);
    await store.placeHold(hold(id, 'h1', 100));
    await store.placeHold(hold(id, 'h2', 100));
    await store.settle({ holdId: 'h1', accountId: id, costNano: 50, usage: usage(id, 'same') });
    await expect(
      store.settle({ holdId: 'h2', accountId: id, costNano: 50, usage: usage(id, 'same') }),
    ).rejects.toThrow();
    expect(await store.openHoldsNano(id)).toBe(100);
    expect((await store.getAccount(id))?.balanceNano).toBe(850);
    expect((await store.ledgerCheck()).ok).toBe(true);
  });

  it('a hold released by the sweeper is not returned twice when its request settles later', async () => {
    const id = await account(1000);
    await store.placeHold(hold(id, 'h1', 400, Date.now() - 1));
    expect(await store.releaseHolds({ kind: 'expired', now: Date.now() })).toBe(1);
    expect((await store.getAccount(id))?.balanceNano).toBe(1000);
    const settled = await store.settle({
      holdId: 'h1',
      accountId: id,
      costNano: 100,
      usage: usage(id, 'r1'),
    });
    expect(settled.balanceNano).toBe(900);
    const released = await store.release({ holdId: 'h1', accountId: id, usage: null });
    expect(released.balanceNano).toBe(900);
    expect((await store.ledgerCheck()).ok).toBe(true);
  });

  it('releaseHolds all / not_owned_by / expired pick the right holds', async () => {
    const id = await account(10_000);
    await store.placeHold(hold(id, 'a', 100));
    await store.placeHold({ ...hold(id, 'b', 200), owner: 'inst_b' });
    await store.placeHold(hold(id, 'c', 300, Date.now() - 5));
    expect(await store.releaseHolds({ kind: 'expired', now: Date.now() })).toBe(1);
    expect(await store.releaseHolds({ kind: 'not_owned_by', owner: 'inst_a' })).toBe(1);
    expect(await store.openHoldsNano(id)).toBe(100);
    expect(await store.releaseHolds({ kind: 'all' })).toBe(1);
    expect((await store.getAccount(id))?.balanceNano).toBe(10_000);
  });

  it('ledger check reports an account whose balance was changed outside the ledger', async () => {
    const id = await account(1000);
    const raw = new SQLite(file);
    raw.prepare('update accounts set balance_nano = balance_nano + 5 where id = ?').run(id);
    raw.close();
    const report = await store.ledgerCheck();
    expect(report.ok).toBe(false);
    expect(report.problems).toEqual([
      expect.objectContaining({ accountId: id, reason: 'mismatch', discrepancyNano: -5 }),
    ]);
  });

  it('the balance column refuses to go below zero even if asked directly', async () => {
    const id = await account(10);
    const raw = new SQLite(file);
    expect(() => raw.prepare('update accounts set balance_nano = -1 where id = ?').run(id)).toThrow(/CHECK/);
    raw.close();
  });

  it('at most maxActive unrevoked keys; revoked keys do not count', async () => {
    const id = await account(0);
    const make = (n: number) =>
      store.createApiKey({ accountId: id, name: `k${n}`, keyHash: `h${n}`, hint: 'x', maxActive: 2 });
    const a = await make(1);
    expect((await make(2)).ok).toBe(true);
    expect(await make(3)).toEqual({ ok: false, reason: 'limit_reached' });
    if (!a.ok) throw new Error('key');
    expect(await store.revokeApiKey(id, a.key.id)).toBe('revoked');
    expect(await store.revokeApiKey(id, a.key.id)).toBe('already_revoked');
    expect(await store.revokeApiKey(id, 'key_missing')).toBe('not_found');
    expect((await make(4)).ok).toBe(true);
    expect((await store.findKeyByHash('h1'))?.revoked).toBe(true);
    expect((await store.findKeyByHash('h4'))?.revoked).toBe(false);
  });

  it('emails are unique', async () => {
    await store.createAccount({ email: 'same@x.test', role: 'user', passwordHash: null });
    expect(await store.createAccount({ email: 'same@x.test', role: 'admin', passwordHash: null })).toEqual({
      ok: false,
      reason: 'email_taken',
    });
  });
});
