import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type KeyWindow,
  keyHold,
  keyRelease,
  keySettle,
  LIMIT_RESETS,
  remaining,
  windowEnd,
  windowStart,
} from '../../src/store/key-window-rules.js';

const DAY = 86_400_000;
// 2000-01-01 … 2100-01-01.
const time = fc.integer({ min: 946_684_800_000, max: 4_102_444_800_000 });
const reset = fc.constantFrom(...LIMIT_RESETS);

describe('the window of a key limit', () => {
  it('a time falls in [start, end) of its window, and the window starts at the boundary the reset names', () => {
    fc.assert(
      fc.property(reset, time, (r, t) => {
        const start = windowStart(r, t);
        const end = windowEnd(r, t);
        expect(start).toBeLessThanOrEqual(t);
        if (r === 'never') {
          expect(start).toBe(0);
          expect(end).toBeNull();
          return;
        }
        expect(end).not.toBeNull();
        expect(t).toBeLessThan(end as number);
        const d = new Date(start);
        expect(d.getUTCHours() + d.getUTCMinutes() + d.getUTCSeconds() + d.getUTCMilliseconds()).toBe(0);
        if (r === 'weekly') expect(d.getUTCDay()).toBe(1);
        if (r === 'monthly') expect(d.getUTCDate()).toBe(1);
        // The next window starts exactly at the end: no gap, no overlap.
        expect(windowStart(r, end as number)).toBe(end);
        expect(windowStart(r, (end as number) - 1)).toBe(start);
      }),
    );
  });

  it('known boundaries: Monday 00:00 UTC and the 1st 00:00 UTC', () => {
    const wed = Date.UTC(2025, 0, 15, 13, 0); // Wednesday 15 January 2025
    expect(new Date(windowStart('weekly', wed)).toISOString()).toBe('2025-01-13T00:00:00.000Z');
    expect(new Date(windowEnd('weekly', wed) as number).toISOString()).toBe('2025-01-20T00:00:00.000Z');
    expect(new Date(windowStart('monthly', wed)).toISOString()).toBe('2025-01-01T00:00:00.000Z');
    expect(new Date(windowEnd('monthly', Date.UTC(2024, 1, 29)) as number).toISOString()).toBe(
      '2024-03-01T00:00:00.000Z',
    );
    expect(windowStart('daily', wed)).toBe(Date.UTC(2025, 0, 15));
  });
});

type Op =
  | { kind: 'hold'; dt: number; amount: number }
  | { kind: 'settle'; which: number; charged: number }
  | { kind: 'release'; which: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant('hold' as const),
    dt: fc.integer({ min: 0, max: 2 * DAY }),
    amount: fc.integer({ min: 0, max: 400 }),
  }),
  fc.record({
    kind: fc.constant('settle' as const),
    which: fc.nat(),
    charged: fc.integer({ min: 0, max: 400 }),
  }),
  fc.record({ kind: fc.constant('release' as const), which: fc.nat() }),
);

describe('holds, settles and releases against a key limit, under a test clock', () => {
  it('never spend above the limit in any window, and every charge counts in its hold’s window only', () => {
    fc.assert(
      fc.property(
        reset,
        time,
        fc.integer({ min: 0, max: 1_000 }),
        fc.array(op, { maxLength: 60 }),
        (r, t0, limit, ops) => {
          let clock = t0;
          let key: KeyWindow = {
            limitNano: limit,
            reset: r,
            windowStart: windowStart(r, t0),
            spentNano: 0,
            heldNano: 0,
          };
          const open: { amount: number; window: number }[] = [];
          // The reference: what each window was charged, by the window of the hold that charged it.
          const spentByWindow = new Map<number, number>();
          for (const o of ops) {
            if (o.kind === 'hold') {
              clock += o.dt;
              const before = remaining(key, clock);
              const outcome = keyHold(key, clock, o.amount);
              expect(outcome.ok).toBe(o.amount <= before);
              if (!outcome.ok) {
                expect(outcome.next).toBe(key);
                continue;
              }
              key = outcome.next;
              // A hold counts in the window of its time, never an earlier one.
              expect(key.windowStart).toBe(windowStart(r, clock));
              open.push({ amount: o.amount, window: key.windowStart });
            } else if (open.length > 0) {
              const [h] = open.splice(o.which % open.length, 1);
              if (!h) continue;
              if (o.kind === 'release') {
                key = keyRelease(key, h.window, h.amount);
              } else {
                // A settle charges at most its hold (billing's bound).
                const charged = Math.min(o.charged, h.amount);
                key = keySettle(key, h.window, h.amount, charged);
                spentByWindow.set(h.window, (spentByWindow.get(h.window) ?? 0) + charged);
              }
            }
            expect(key.spentNano + key.heldNano).toBeLessThanOrEqual(limit);
            const heldInWindow = open
              .filter((h) => h.window === key.windowStart)
              .reduce((n, h) => n + h.amount, 0);
            expect(key.heldNano).toBe(heldInWindow);
            expect(key.spentNano).toBe(spentByWindow.get(key.windowStart) ?? 0);
          }
        },
      ),
    );
  });

  it('an instance whose clock is behind counts in the row’s window, never an earlier one', () => {
    const t = Date.UTC(2025, 5, 2, 0, 0, 1);
    const key: KeyWindow = {
      limitNano: 100,
      reset: 'daily',
      windowStart: windowStart('daily', t),
      spentNano: 90,
      heldNano: 0,
    };
    const behind = keyHold(key, t - 2_000, 20);
    expect(behind.ok).toBe(false);
    const fits = keyHold(key, t - 2_000, 10);
    expect(fits.next.windowStart).toBe(key.windowStart);
  });
});
