import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatNano, maxTokensFor, nanoToUsd, parseUsdToNano, tokenCost } from '../../src/billing/money.js';

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

  it('cost.total built as input + output matches the spec rule for arbitrary costs', () => {
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
