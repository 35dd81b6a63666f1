import { describe, expect, it } from 'vitest';
import {
  addSpend,
  NO_SPEND,
  type SpendCounters,
  spendAt,
  spendDayOf,
  spendMonthOf,
  spendStarts,
} from '../../src/store/spend.js';

const at = (y: number, m: number, d: number, h = 0) => Date.UTC(y, m, d, h);

describe('spend counters (src/store/spend.ts)', () => {
  it('days and months are UTC, months numbered on across years', () => {
    expect(spendDayOf(at(1970, 0, 1, 23))).toBe(0);
    expect(spendDayOf(at(1970, 0, 2))).toBe(1);
    // One after the other, in both directions: the month of the last day asked is not reused for another.
    expect(spendMonthOf(at(2026, 11, 31, 23))).toBe(2026 * 12 + 11);
    expect(spendMonthOf(at(2027, 0, 1))).toBe(2027 * 12);
    expect(spendMonthOf(at(2027, 0, 1, 5))).toBe(2027 * 12);
    expect(spendMonthOf(at(2026, 10, 30, 12))).toBe(2026 * 12 + 10);
    expect(spendStarts(at(2026, 10, 27, 7) + 123)).toEqual({
      dayStart: at(2026, 10, 27),
      monthStart: at(2026, 10, 1),
    });
  });

  it("a charge adds to its request's day, replaces an earlier day's counter and leaves a later one alone", () => {
    const counters: SpendCounters = { ...NO_SPEND };
    addSpend(counters, 100, at(2026, 10, 30, 10));
    addSpend(counters, 20, at(2026, 10, 30, 11));
    expect(spendAt(counters, at(2026, 10, 30, 12))).toEqual({ todayNano: 120, monthNano: 120 });
    // The next day, in the next month: both counters start over.
    addSpend(counters, 5, at(2026, 11, 1, 0));
    expect(counters).toEqual({
      spendDay: spendDayOf(at(2026, 11, 1)),
      spendDayNano: 5,
      spendMonth: 2026 * 12 + 11,
      spendMonthNano: 5,
    });
    // A request of the day before, settled now: counted nowhere it would be read.
    addSpend(counters, 7, at(2026, 10, 30, 23));
    expect(spendAt(counters, at(2026, 11, 1, 1))).toEqual({ todayNano: 5, monthNano: 5 });
    // Read on a later day of the month, then in a later month.
    expect(spendAt(counters, at(2026, 11, 2))).toEqual({ todayNano: 0, monthNano: 5 });
    expect(spendAt(counters, at(2027, 0, 1))).toEqual({ todayNano: 0, monthNano: 0 });
    // Read by a clock a little behind the one that stamped the requests: they count.
    expect(spendAt(counters, at(2026, 10, 30, 23))).toEqual({ todayNano: 5, monthNano: 5 });
  });
});
