import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.js';
import * as rules from '../../src/store/ledger-rules.js';
import type { PlaceHoldResult, SettleInput, SettleResult, Store } from '../../src/store/types.js';
import { createTestDatabase, TEST_DIALECT, type TestDatabase } from '../helpers/test-database.js';
import { usageRow } from './store-fixtures.js';

/**
 * The ledger's money rules (src/store/ledger-rules.ts) are the one statement of how balances change. Here
 * they are held to their own laws, and the store of the database under test (TEST_DATABASE: the SQLite
 * ledger, or the PostgreSQL ledger with its single statements) is held to them: random sequences of
 * credits, holds, settles and releases run against the store and against the rules, compared after every
 * step.
 *
 * Reproduce a failure with the seed (and path) fast-check prints: LEDGER_PROPERTY_SEED=<seed>.
 */
const SEED = Number(process.env.LEDGER_PROPERTY_SEED ?? 20_260_322);
const RUNS = Number(process.env.LEDGER_PROPERTY_RUNS ?? 60);
const ACCOUNTS = 2;

describe('the ledger rules, on their own', () => {
  const nano = fc.integer({ min: 0, max: 2 ** 40 });

  it('a hold takes exactly its amount when the balance covers it, and changes nothing when it does not', () => {
    fc.assert(
      fc.property(nano, nano, (balance, amount) => {
        const held = rules.hold(balance, amount);
        expect(held.ok).toBe(amount <= balance);
        expect(held.next).toBe(held.ok ? balance - amount : balance);
        expect(held.next).toBeGreaterThanOrEqual(0);
      }),
      { seed: SEED, numRuns: 2_000 },
    );
  });

  it('a settle keeps every nanodollar: charged from hold and balance, never below zero, short only when both are spent', () => {
    fc.assert(
      fc.property(nano, nano, nano, (balance, held, cost) => {
        const s = rules.settle(balance, held, cost);
        // Nothing is created or lost: what was available is now charged or available again.
        expect(s.next + s.charged).toBe(balance + held);
        expect(s.charged + s.shortfall).toBe(cost);
        expect(s.next).toBeGreaterThanOrEqual(0);
        expect(s.charged).toBeGreaterThanOrEqual(0);
        expect(s.shortfall).toBeGreaterThanOrEqual(0);
        // Unbilled service only when the hold and the whole balance went to the charge.
        if (s.shortfall > 0) expect(s.next).toBe(0);
        if (cost <= balance + held) expect(s.shortfall).toBe(0);
        // The usual settle (the hold covers the cost): the rest of the hold goes back.
        if (cost <= held) expect(s.next).toBe(balance + held - cost);
      }),
      { seed: SEED, numRuns: 2_000 },
    );
  });

  it('a release gives the whole hold back; a credit adds its amount, up to the largest exact balance', () => {
    fc.assert(
      fc.property(nano, nano, (balance, amount) => {
        expect(rules.release(balance, amount)).toBe(balance + amount);
        expect(rules.credit(balance, amount)).toBe(balance + amount);
      }),
      { seed: SEED, numRuns: 500 },
    );
    expect(() => rules.credit(Number.MAX_SAFE_INTEGER, 1)).toThrow(/largest amount/);
  });

  it('amounts are whole nanodollars: negative or fractional ones are refused before any rule runs', () => {
    expect(rules.invalidHold(-1)).toBeInstanceOf(Error);
    expect(rules.invalidHold(0.5)).toBeInstanceOf(Error);
    expect(rules.invalidHold(0)).toBeUndefined();
    expect(rules.invalidCost(-1)).toBeInstanceOf(Error);
    expect(rules.invalidCost(0)).toBeUndefined();
    expect(rules.invalidCredit(0)).toBeInstanceOf(Error);
    expect(rules.invalidCredit(1)).toBeUndefined();
  });
});

// ── the store against the rules ────────────────────────────────────────────

/** A fraction in [0, 1), for amounts drawn relative to the model's figures. */
const fraction = fc.integer({ min: 0, max: 999_999 }).map((n) => n / 1_000_000);

/** A hold's amount, relative to the balance when it is placed. */
type HoldSize = 'zero' | 'below' | 'all' | 'above';
/** A settle's cost, relative to its hold's amount and the balance: `short` is more than both together. */
type CostShape = 'zero' | 'below' | 'equal' | 'above' | 'short';

type Step =
  /** `overflow`: a credit the balance cannot take (`amount` only varies it). */
  | { kind: 'credit'; account: number; amount: number; overflow: boolean }
  | { kind: 'hold'; account: number; size: HoldSize; f: number }
  | { kind: 'settle'; pick: number; cost: CostShape; f: number; idempotent: boolean }
  | { kind: 'release'; pick: number; withUsage: boolean }
  | { kind: 'together'; calls: Together[] };

/** A call of a batch sent in one event-loop turn (see `runTogether`). */
interface Together {
  account: number;
  kind: 'hold' | 'settle' | 'release';
  size: HoldSize;
  covered: 'zero' | 'below' | 'equal';
  f: number;
  pick: number;
}

const account = fc.integer({ min: 0, max: ACCOUNTS - 1 });
const pick = fc.nat({ max: 1_000 });
const steps: fc.Arbitrary<Step[]> = fc.array(
  fc.oneof(
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('credit' as const),
        account,
        amount: fc.oneof(
          { weight: 4, arbitrary: fc.integer({ min: 1, max: 20_000 }) },
          { weight: 1, arbitrary: fc.integer({ min: 1, max: 2 ** 40 }) },
        ),
        overflow: fc.oneof(
          { weight: 12, arbitrary: fc.constant(false) },
          { weight: 1, arbitrary: fc.constant(true) },
        ),
      }),
    },
    {
      weight: 5,
      arbitrary: fc.record({
        kind: fc.constant('hold' as const),
        account,
        size: fc.constantFrom<HoldSize>('zero', 'below', 'below', 'all', 'above'),
        f: fraction,
      }),
    },
    {
      weight: 5,
      arbitrary: fc.record({
        kind: fc.constant('settle' as const),
        pick,
        cost: fc.constantFrom<CostShape>('zero', 'below', 'equal', 'above', 'short'),
        f: fraction,
        idempotent: fc.boolean(),
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({ kind: fc.constant('release' as const), pick, withUsage: fc.boolean() }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('together' as const),
        calls: fc.array(
          fc.record({
            account,
            kind: fc.constantFrom<Together['kind']>('hold', 'settle', 'release'),
            size: fc.constantFrom<HoldSize>('zero', 'below', 'all', 'above'),
            covered: fc.constantFrom<Together['covered']>('zero', 'below', 'equal'),
            f: fraction,
            pick,
          }),
          { minLength: 2, maxLength: 8 },
        ),
      }),
    },
  ),
  { minLength: 1, maxLength: 30 },
);

/** What the rules say the ledger holds. */
interface Model {
  ids: string[];
  balances: number[];
  holds: { id: string; account: number; amount: number; open: boolean }[];
  shortfalls: { requests: number; shortfallNano: number }[];
}

let dir: string;
let db: TestDatabase;
let store: Store;
let run = 0;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-ledger-rule-'));
  db = await createTestDatabase(dir, 'db.sqlite');
  store = await openStore(db.url, { sqliteSynchronous: 'NORMAL' });
  await store.migrate();
});
afterAll(async () => {
  await store?.close();
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});

describe(`the ${TEST_DIALECT} ledger follows the rules`, () => {
  it(`random credits, holds, settles and releases end where the rules say, step by step (${RUNS} sequences)`, async () => {
    await fc.assert(
      fc.asyncProperty(steps, fc.integer({ min: 0, max: 50_000 }), async (sequence, allowance) => {
        const model = await newModel();
        for (const step of sequence) {
          await runStep(model, step);
          await expectStoreMatches(model);
        }
        await expectLedgerCheck(model, allowance);
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });
});

async function newModel(): Promise<Model> {
  run += 1;
  const ids: string[] = [];
  for (let a = 0; a < ACCOUNTS; a++) {
    const created = await store.createAccount({
      email: `rule-${run}-${a}-${Math.random().toString(36).slice(2)}@x.test`,
      role: 'user',
      passwordHash: null,
    });
    if (!created.ok) throw new Error('account');
    ids.push(created.account.id);
  }
  return {
    ids,
    balances: ids.map(() => 0),
    holds: [],
    shortfalls: ids.map(() => ({ requests: 0, shortfallNano: 0 })),
  };
}

let calls = 0;
const nextId = (what: string) => `${what}-${run}-${++calls}`;

function holdAmount(balance: number, size: HoldSize, f: number): number {
  if (size === 'zero') return 0;
  if (size === 'below') return Math.floor(balance * f);
  if (size === 'all') return balance;
  return Math.min(Number.MAX_SAFE_INTEGER, balance + 1 + Math.floor(f * 1_000));
}

function settleCost(holdAmountNano: number, balance: number, shape: CostShape, f: number): number {
  const cost =
    shape === 'zero'
      ? 0
      : shape === 'below'
        ? Math.floor(holdAmountNano * f)
        : shape === 'equal'
          ? holdAmountNano
          : shape === 'above'
            ? holdAmountNano + 1 + Math.floor(Math.max(0, balance - 1) * f)
            : holdAmountNano + balance + 1 + Math.floor(f * 1_000);
  return Math.min(Number.MAX_SAFE_INTEGER, cost);
}

/** Places a hold on the store, and says what the rules expect of it. */
function placeHold(model: Model, accountIndex: number, amountNano: number) {
  const id = nextId('hold');
  const accountId = model.ids[accountIndex] as string;
  const before = model.balances[accountIndex] as number;
  const ruled = rules.hold(before, amountNano);
  model.balances[accountIndex] = ruled.next;
  model.holds.push({ id, account: accountIndex, amount: amountNano, open: ruled.ok });
  const expected: PlaceHoldResult = ruled.ok
    ? { ok: true }
    : { ok: false, reason: 'insufficient_balance', balanceNano: before };
  const now = Date.now();
  const placed = store.placeHold({
    holdId: id,
    accountId,
    requestId: `req-${id}`,
    amountNano,
    owner: 'inst_rule',
    createdAt: now,
    expiresAt: now + 600_000,
  });
  return { placed, expected };
}

/** Settles a hold on the store, and says what the rules expect of it. */
function settleHold(model: Model, holdIndex: number, costNano: number, idempotent: boolean) {
  const hold = model.holds[holdIndex] as Model['holds'][number];
  const accountId = model.ids[hold.account] as string;
  const ruled = rules.settle(model.balances[hold.account] as number, hold.open ? hold.amount : 0, costNano);
  model.balances[hold.account] = ruled.next;
  hold.open = false;
  if (ruled.shortfall > 0) {
    const short = model.shortfalls[hold.account] as Model['shortfalls'][number];
    short.requests += 1;
    short.shortfallNano += ruled.shortfall;
  }
  const requestId = nextId('settle');
  const inputCostNano = Math.floor(costNano / 2);
  const input: SettleInput = {
    holdId: hold.id,
    accountId,
    holdAmountNano: hold.amount,
    costNano,
    usage: usageRow(accountId, requestId, { inputCostNano, outputCostNano: costNano - inputCostNano }),
  };
  if (idempotent) input.idempotency = { key: requestId, render: (s) => JSON.stringify(s) };
  const expected: SettleResult = {
    balanceNano: ruled.next,
    chargedNano: ruled.charged,
    shortfallNano: ruled.shortfall,
  };
  return { input, expected };
}

/** Releases a hold on the store, and says what the rules expect of it. */
function releaseHold(model: Model, holdIndex: number, withUsage: boolean) {
  const hold = model.holds[holdIndex] as Model['holds'][number];
  const accountId = model.ids[hold.account] as string;
  const next = rules.release(model.balances[hold.account] as number, hold.open ? hold.amount : 0);
  model.balances[hold.account] = next;
  hold.open = false;
  const usage = withUsage
    ? usageRow(accountId, nextId('release'), {
        status: 'error',
        errorCode: 'upstream_error',
        httpStatus: 502,
      })
    : null;
  const released = store.release({ holdId: hold.id, accountId, holdAmountNano: hold.amount, usage });
  return { released, expected: { balanceNano: next } };
}

async function runStep(model: Model, step: Step): Promise<void> {
  if (step.kind === 'credit') {
    const before = model.balances[step.account] as number;
    // Past the largest exact balance: refused by the credit rule, or as no whole number at all.
    const amount = step.overflow ? Number.MAX_SAFE_INTEGER - before + 1 + (step.amount % 1_000) : step.amount;
    const credited = store.addCredit({
      accountId: model.ids[step.account] as string,
      amountNano: amount,
      note: 'rule',
    });
    let next: number;
    try {
      const invalid = rules.invalidCredit(amount);
      if (invalid) throw invalid;
      next = rules.credit(before, amount);
    } catch (error) {
      await expect(credited).rejects.toThrow((error as Error).message);
      return;
    }
    model.balances[step.account] = next;
    expect(await credited).toEqual({ balanceNano: next });
    return;
  }
  if (step.kind === 'hold') {
    const amount = holdAmount(model.balances[step.account] as number, step.size, step.f);
    const { placed, expected } = placeHold(model, step.account, amount);
    expect(await placed).toEqual(expected);
    return;
  }
  if (step.kind === 'settle') {
    // A hold of any state: open, settled, released, or refused (never placed): the last three settle as a
    // hold of 0.
    if (model.holds.length === 0) return;
    const index = step.pick % model.holds.length;
    const hold = model.holds[index] as Model['holds'][number];
    const cost = settleCost(hold.amount, model.balances[hold.account] as number, step.cost, step.f);
    const { input, expected } = settleHold(model, index, cost, step.idempotent);
    const accountId = input.accountId;
    const begin = () =>
      store.beginIdempotent({
        accountId,
        key: input.usage.requestId,
        bodyHash: 'body',
        requestId: input.usage.requestId,
        now: Date.now(),
        lockedUntil: Date.now() + 60_000,
        expiresAt: Date.now() + 3_600_000,
      });
    if (step.idempotent) expect(await begin()).toEqual({ kind: 'started' });
    expect(await store.settle(input)).toEqual(expected);
    // The answer stored with the charge, in its transaction, is the settle's own.
    if (step.idempotent)
      expect(await begin()).toEqual({ kind: 'replay', responseJson: JSON.stringify(expected) });
    return;
  }
  if (step.kind === 'release') {
    if (model.holds.length === 0) return;
    const { released, expected } = releaseHold(model, step.pick % model.holds.length, step.withUsage);
    expect(await released).toEqual(expected);
    return;
  }
  await runTogether(model, step.calls);
}

/**
 * Calls sent in one event-loop turn: the SQLite ledger commits them in one group (an account with several
 * reads its row once), the PostgreSQL ledger sends an account's holds, or its settles, as one statement.
 * Each account's calls in a batch are of one kind — its first call's — so that the order they reach the
 * database in cannot change the outcome (on PostgreSQL the holds and the settles of an account queue apart,
 * and releases run side by side): holds, settles whose open hold covers their cost, or releases, each hold
 * named once. The results are the rules' applied in arrival order; a call's own balance is not compared,
 * as the calls of a group may report the balance after the whole group.
 */
async function runTogether(model: Model, batch: Together[]): Promise<void> {
  const kindOf = new Map<number, Together['kind']>();
  const named = new Set<number>();
  const sent: { outcome: Promise<unknown>; check: (value: unknown) => void }[] = [];
  const balancesAtStart = [...model.balances];
  for (const call of batch) {
    const kind = kindOf.get(call.account) ?? call.kind;
    kindOf.set(call.account, kind);
    if (kind === 'hold') {
      const amount = holdAmount(balancesAtStart[call.account] as number, call.size, call.f);
      const { placed, expected } = placeHold(model, call.account, amount);
      sent.push({
        outcome: placed,
        check: (value) =>
          expect(value).toEqual(expected.ok ? expected : { ...expected, balanceNano: expect.any(Number) }),
      });
      continue;
    }
    const choices = model.holds
      .map((h, i) => ({ h, i }))
      .filter(({ h, i }) => h.account === call.account && !named.has(i) && (kind === 'release' || h.open));
    if (choices.length === 0) continue;
    const { h, i } = choices[call.pick % choices.length] as (typeof choices)[number];
    named.add(i);
    if (kind === 'settle') {
      const cost = settleCost(h.amount, 0, call.covered, call.f);
      const { input, expected } = settleHold(model, i, cost, false);
      sent.push({
        outcome: store.settle(input),
        check: (value) => expect(value).toEqual({ ...expected, balanceNano: expect.any(Number) }),
      });
    } else {
      const { released } = releaseHold(model, i, call.pick % 2 === 0);
      sent.push({
        outcome: released,
        check: (value) => expect(value).toEqual({ balanceNano: expect.any(Number) }),
      });
    }
  }
  const outcomes = await Promise.all(sent.map((s) => s.outcome));
  outcomes.forEach((value, k) => {
    sent[k]?.check(value);
  });
}

async function expectStoreMatches(model: Model): Promise<void> {
  for (let a = 0; a < ACCOUNTS; a++) {
    const id = model.ids[a] as string;
    const held = model.holds.filter((h) => h.account === a && h.open).reduce((n, h) => n + h.amount, 0);
    expect({
      balance: (await store.getAccount(id))?.balanceNano,
      held: await store.openHoldsNano(id),
    }).toEqual({
      balance: model.balances[a],
      held,
    });
  }
}

/**
 * The ledger check finds every nanodollar of the run's accounts where it should be, and reports their
 * unbilled service as the rules counted it, failing an account beyond the allowance.
 */
async function expectLedgerCheck(model: Model, allowance: number): Promise<void> {
  const report = await store.ledgerCheck({ shortfallAllowanceNano: allowance });
  for (let a = 0; a < ACCOUNTS; a++) {
    const id = model.ids[a] as string;
    const short = model.shortfalls[a] as Model['shortfalls'][number];
    const reported = report.shortfalls.find((s) => s.accountId === id);
    expect(reported && { requests: reported.requests, shortfallNano: reported.shortfallNano }).toEqual(
      short.requests > 0 ? short : undefined,
    );
    const problems = report.problems.filter((p) => p.accountId === id).map((p) => p.reason);
    expect(problems).toEqual(rules.beyondAllowance(short.shortfallNano, allowance) ? ['shortfall'] : []);
  }
}
