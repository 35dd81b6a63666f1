import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { accountFiguresOf, afterGroup, type FiguresRow } from '../../src/store/sqlite/account-rows.js';

// V8's own view of the heap: `gc()` and `%HaveSameMap` (hidden classes), enabled from inside the test.
setFlagsFromString('--expose-gc');
setFlagsFromString('--allow-natives-syntax');
const gc = runInNewContext('gc') as () => void;
const haveSameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean;
const oldGenerationUsed = () =>
  getHeapSpaceStatistics().find((s) => s.space_name === 'old_space')?.space_used_size ?? 0;

const row = (balance: number, spendDayNano: number): FiguresRow => ({
  balance_nano: balance,
  status: 'active',
  spend_day: 20_419,
  spend_day_nano: spendDayNano,
  spend_month: 670,
  spend_month_nano: spendDayNano * 3,
});

describe('the SQLite ledger leaves no garbage in the old generation per group commit', () => {
  // A holder that has lived through two garbage collections stands for the store, which lives in the old
  // generation.
  const longLived = <T>(value: T): { value: T } => {
    const holder = { value };
    gc();
    gc();
    return holder;
  };

  it('leaves an empty collection as it is between groups', () => {
    const set = longLived(new Set<string>());
    const map = longLived(new Map<string, number>());
    const [emptySet, emptyMap] = [set.value, map.value];
    const before = oldGenerationUsed();
    for (let i = 0; i < 100_000; i++) {
      set.value = afterGroup(set.value);
      map.value = afterGroup(map.value);
    }
    expect(set.value).toBe(emptySet);
    expect(map.value).toBe(emptyMap);
    // `clear()` on both allocates a new table there every round, whether they hold anything or not: over
    // this loop, many times the bound. What else the process allocates there meanwhile (compiled code's
    // metadata) stays well under it.
    expect(oldGenerationUsed() - before).toBeLessThan(1024 * 1024);
  });

  it('gives the next group new collections in the young generation instead of emptying used ones', () => {
    const set = longLived(new Set<string>());
    const map = longLived(new Map<string, number>());
    const before = oldGenerationUsed();
    for (let i = 0; i < 100_000; i++) {
      // A group with several calls of one account: one entry in each, then the next group.
      set.value.add('acct');
      map.value.set('acct', i);
      const [usedSet, usedMap] = [set.value, map.value];
      set.value = afterGroup(set.value);
      map.value = afterGroup(map.value);
      if (set.value === usedSet || map.value === usedMap || set.value.size + map.value.size > 0) {
        throw new Error('a used collection was kept for the next group');
      }
    }
    // Emptying them instead makes a new table in the old generation each time, with `clear()` or with
    // `delete` down to empty: many times the bound over this loop. New collections die young.
    expect(oldGenerationUsed() - before).toBeLessThan(1024 * 1024);
  });

  it('gives every account read in a group the same hidden class', () => {
    const a = accountFiguresOf(row(1_000_000_000_000_000, 2_688));
    const b = accountFiguresOf(row(5, 0));
    expect(a).toEqual({
      balanceNano: 1_000_000_000_000_000,
      spendDay: 20_419,
      spendDayNano: 2_688,
      spendMonth: 670,
      spendMonthNano: 8_064,
      status: 'active',
      changed: false,
    });
    expect(haveSameMap(a, b)).toBe(true);
    // Read again and again, as group commits do, with the figures a settle changes in place: one shape.
    let shapes = 0;
    for (let i = 0; i < 2_000; i++) {
      const account = accountFiguresOf(row(1_000_000_000_000_000 - i * 10_000, i * 2_688));
      account.balanceNano += 7_312;
      account.changed = true;
      if (!haveSameMap(account, a)) shapes++;
    }
    expect(shapes).toBe(0);
  });
});
