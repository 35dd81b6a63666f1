import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  formatNano,
  maxTokensFor,
  nanoDecimal,
  nanoToUsd,
  parseUsdToNano,
  tokenCost,
} from '../../src/money/money.js';

describe('money', () => {
  it('parses dollar amounts exactly into nanodollars', () => {
    expect(parseUsdToNano('1')).toBe(1_000_000_000);
    expect(parseUsdToNano('0.000000001')).toBe(1);
    expect(parseUsdToNano('12.5')).toBe(12_500_000_000);
    expect(parseUsdToNano(' 0.15 ')).toBe(150_000_000);
    for (const bad of ['', '-1', '1e3', '0.0000000001', 'abc', '1.', '.5', '1,5', 'Infinity', '1000000001']) {
      expect(parseUsdToNano(bad)).toBeUndefined();
    }
  });

  it('formats nanodollars exactly', () => {
    expect(formatNano(1)).toBe('0.000000001');
    expect(formatNano(12_500_000_000)).toBe('12.5');
    expect(formatNano(0)).toBe('0');
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10 ** 15 }), (n) => {
        expect(parseUsdToNano(formatNano(n))).toBe(n);
      }),
    );
  });

  it('formats every whole amount exactly as the BigInt division does, either sign, past 2^53 too', () => {
    const byBigInt = (nano: number) => {
      const abs = BigInt(Math.abs(nano));
      const frac = (abs % 1_000_000_000n).toString().padStart(9, '0').replace(/0+$/, '');
      return `${nano < 0 ? '-' : ''}${abs / 1_000_000_000n}${frac ? `.${frac}` : ''}`;
    };
    const edges = [
      0,
      1,
      999_999_999,
      1_000_000_000,
      1_000_000_001,
      2 ** 53 - 1,
      -(2 ** 53 - 1),
      2 ** 53,
      10 ** 18,
    ];
    for (const n of edges) expect(formatNano(n), String(n)).toBe(byBigInt(n));
    fc.assert(
      fc.property(fc.integer({ min: -(2 ** 53 - 1), max: 2 ** 53 - 1 }), (n) => {
        expect(formatNano(n)).toBe(byBigInt(n));
      }),
      { numRuns: 20_000 },
    );
    expect(() => nanoDecimal(-1)).toThrow(RangeError);
    expect(() => nanoDecimal(0.5)).toThrow(RangeError);
  });

  it('token cost is ceil(tokens × price / 10^6), exact for large values', () => {
    expect(tokenCost(0, 3_000_000_000)).toBe(0);
    expect(tokenCost(1, 280_000_000)).toBe(280);
    expect(tokenCost(1, 1)).toBe(1); // 1e-6 rounds up to one nanodollar
    expect(tokenCost(1_000_000, 3_000_000_000)).toBe(3_000_000_000);
    expect(tokenCost(9_007_199, 100_000_000_000)).toBe(900_719_900_000);
    expect(() => tokenCost(-1, 1)).toThrow();
    expect(() => tokenCost(1.5, 1)).toThrow();
  });

  it('maxTokensFor is the largest count whose cost fits the budget', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10 ** 12 }),
        fc.integer({ min: 1, max: 10 ** 11 }),
        (budget, price) => {
          const n = maxTokensFor(budget, price);
          expect(tokenCost(n, price)).toBeLessThanOrEqual(budget);
          // n is clamped to the largest exact integer; below that clamp it is the exact maximum.
          if (n < Number.MAX_SAFE_INTEGER) expect(tokenCost(n + 1, price)).toBeGreaterThan(budget);
        },
      ),
    );
  });

  it('maxTokensFor: a free side fits any budget that is not negative, even zero', () => {
    expect(maxTokensFor(0, 0)).toBe(Number.MAX_SAFE_INTEGER);
    expect(maxTokensFor(5, 0)).toBe(Number.MAX_SAFE_INTEGER);
    expect(maxTokensFor(-1, 0)).toBe(0);
    expect(maxTokensFor(0, 1)).toBe(0);
  });

  it('cost.total built as input + output is within a nanodollar of the exact total, for arbitrary costs', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10 ** 12 }), fc.integer({ min: 0, max: 10 ** 12 }), (a, b) => {
        const input = nanoToUsd(a);
        const output = nanoToUsd(b);
        const total = input + output;
        expect(total).toBe(input + output);
        expect(Math.abs(total - (a + b) / 1e9)).toBeLessThan(1e-9);
      }),
    );
  });
});

describe('the exact fast paths agree with BigInt arithmetic', () => {
  // Reference implementations with nothing but BigInt.
  const refCost = (t: number, p: number) => Number((BigInt(t) * BigInt(p) + 999_999n) / 1_000_000n);
  const refMax = (b: number, p: number) => {
    const q = (BigInt(b) * 1_000_000n) / BigInt(p);
    return q > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(q);
  };
  // A seeded generator: the same cases every run.
  let seed = 20_261_123;
  const next = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed / 2_147_483_648;
  };
  const magnitude = (max: number) => Math.floor(next() ** 4 * max);

  it('tokenCost over 200,000 random and boundary cases', () => {
    const cases: [number, number][] = [
      [1, 1],
      [999_999, 1],
      [1_000_001, 1],
      [Number.MAX_SAFE_INTEGER, 1],
      [Number.MAX_SAFE_INTEGER - 1_000_000, 1],
      [Math.floor(Number.MAX_SAFE_INTEGER / 3), 3],
      [94_906_265, 94_906_267],
    ];
    for (let i = 0; i < 200_000; i++) cases.push([magnitude(1e12), magnitude(1e12)]);
    // Quotients near 9e9, where the double's ulp (≈ 2e-6) is closest to the smallest fraction (1e-6).
    for (let k = 9_007_199_000; k < 9_007_199_254; k += 7) cases.push([k * 1_000_000 + 1, 1]);
    for (const [t, p] of cases) {
      if (t * p > 1e24) continue; // out of range for both (checked by the RangeError test above)
      if (BigInt(t) * BigInt(p) > BigInt(Number.MAX_SAFE_INTEGER) * 1_000_000n) continue;
      expect(tokenCost(t, p), `${t} × ${p}`).toBe(refCost(t, p));
    }
  });

  it('maxTokensFor over 200,000 random and boundary cases', () => {
    const cases: [number, number][] = [
      [1, 1],
      [Number.MAX_SAFE_INTEGER, 1],
      [Math.floor(Number.MAX_SAFE_INTEGER / 1_000_000), 7],
      [Math.floor(Number.MAX_SAFE_INTEGER / 1_000_000) - 1, 999_999_999],
    ];
    for (let i = 0; i < 200_000; i++) cases.push([magnitude(1e15), 1 + magnitude(1e12)]);
    // The largest quotients the fast path takes, where the ulp is largest.
    const top = Math.floor(Number.MAX_SAFE_INTEGER / 1_000_000) - 200;
    for (let b = top; b < top + 100; b++) for (let p = 2; p < 60; p++) cases.push([b, p]);
    for (const [b, p] of cases) expect(maxTokensFor(b, p), `${b} / ${p}`).toBe(refMax(b, p));
  });
});
