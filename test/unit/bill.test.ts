import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { billFor, type UsageCount } from '../../src/billing/billing.js';
import { promptCostBound } from '../../src/billing/estimate.js';
import { tokenCost } from '../../src/money/money.js';
import type { ProviderConfig } from '../../src/providers/types.js';

// The settle's money rule (docs/api.md, "Counted usage"), checked over arbitrary calls: what is charged for
// what an upstream reported and what Tollgate counted.

const served = fc.record({
  provider: fc.record({
    inputPriceNano: fc.integer({ min: 0, max: 200_000_000_000 }),
    outputPriceNano: fc.integer({ min: 0, max: 800_000_000_000 }),
    cacheReadPriceNano: fc.integer({ min: 0, max: 200_000_000_000 }),
    cacheWritePriceNano: fc.integer({ min: 0, max: 250_000_000_000 }),
  }),
  cap: fc.integer({ min: 1, max: 200_000 }),
  promptBound: fc.integer({ min: 1, max: 2_000_000 }),
});
const tokens = fc.option(fc.integer({ min: 0, max: 3_000_000 }), { nil: undefined });
const usage: fc.Arbitrary<UsageCount> = fc.record(
  {
    reportedPrompt: tokens,
    reportedCompletion: tokens,
    countedPrompt: fc.integer({ min: 0, max: 3_000_000 }),
    countedCompletion: fc.integer({ min: 0, max: 3_000_000 }),
    reportedCacheRead: tokens,
    reportedCacheWrite: tokens,
  },
  { requiredKeys: ['reportedPrompt', 'reportedCompletion'] },
);
const choices = fc.integer({ min: 1, max: 8 });
type Prices = Pick<
  ProviderConfig,
  'inputPriceNano' | 'outputPriceNano' | 'cacheReadPriceNano' | 'cacheWritePriceNano'
>;

/**
 * The input cost of a prompt split in parts: ceil(tokens × price / 10^6) per part, summed, at most the
 * whole prompt at the dearest of the three prices.
 */
function partsCost(p: Prices, prompt: number, read: number, write: number): number {
  const parts =
    tokenCost(prompt - read - write, p.inputPriceNano) +
    tokenCost(read, p.cacheReadPriceNano) +
    tokenCost(write, p.cacheWritePriceNano);
  const dearest = Math.max(p.inputPriceNano, p.cacheReadPriceNano, p.cacheWritePriceNano);
  return Math.min(parts, tokenCost(prompt, dearest));
}
const holdNano = fc.integer({ min: 0, max: 10_000_000_000_000 });

describe('billFor: what a call is charged', () => {
  it('charges exactly what the upstream reported when nothing was counted and no limit applies', () => {
    fc.assert(
      fc.property(served, choices, tokens, tokens, holdNano, (s, n, p, c, hold) => {
        fc.pre(p !== undefined && c !== undefined);
        const bill = billFor(
          s,
          n,
          { reportedPrompt: p, reportedCompletion: c },
          { holdNano: hold, withinHold: false },
        );
        expect(bill).toEqual({
          promptTokens: p,
          cacheReadTokens: 0,
          cacheWriteTokens: 0,
          completionTokens: c,
          estimated: false,
          inputCostNano: tokenCost(p as number, s.provider.inputPriceNano),
          outputCostNano: tokenCost(c as number, s.provider.outputPriceNano),
        });
      }),
    );
  });

  it('never bills a count above what the call could read or write, nor under what the upstream reported', () => {
    fc.assert(
      fc.property(served, choices, usage, holdNano, fc.boolean(), (s, n, u, hold, within) => {
        const bill = billFor(s, n, u, { holdNano: hold, withinHold: within });
        if (u.reportedPrompt === undefined) {
          expect(bill.promptTokens).toBeLessThanOrEqual(s.promptBound);
          expect(bill.estimated).toBe(true);
        } else expect(bill.promptTokens).toBe(u.reportedPrompt);
        expect(bill.completionTokens).toBeGreaterThanOrEqual(u.reportedCompletion ?? 0);
        if (bill.completionTokens > (u.reportedCompletion ?? 0)) {
          expect(bill.completionTokens).toBeLessThanOrEqual(s.cap * n);
          expect(bill.estimated).toBe(true);
        }
      }),
    );
  });

  it('keeps a counted, cut or implausible call within its hold, taking the excess off the output first', () => {
    fc.assert(
      fc.property(served, choices, usage, holdNano, fc.boolean(), (s, n, u, hold, within) => {
        const bill = billFor(s, n, u, { holdNano: hold, withinHold: within });
        const full = {
          input: partsCost(s.provider, bill.promptTokens, bill.cacheReadTokens, bill.cacheWriteTokens),
          output: tokenCost(bill.completionTokens, s.provider.outputPriceNano),
        };
        const total = bill.inputCostNano + bill.outputCostNano;
        if (within || bill.estimated) {
          expect(total).toBe(Math.min(full.input + full.output, hold));
          expect(bill.inputCostNano).toBe(Math.min(full.input, hold));
        } else {
          expect(bill.inputCostNano).toBe(full.input);
          expect(bill.outputCostNano).toBe(full.output);
        }
        expect(bill.inputCostNano).toBeGreaterThanOrEqual(0);
        expect(bill.outputCostNano).toBeGreaterThanOrEqual(0);
      }),
    );
  });

  it('prices the cached parts of a reported prompt at the cache prices, each part rounded up apart', () => {
    fc.assert(
      fc.property(served, choices, tokens, tokens, tokens, tokens, holdNano, (s, n, p, c, r, w, hold) => {
        fc.pre(p !== undefined && c !== undefined);
        const prompt = p as number;
        const bill = billFor(
          s,
          n,
          { reportedPrompt: prompt, reportedCompletion: c, reportedCacheRead: r, reportedCacheWrite: w },
          { holdNano: hold, withinHold: false },
        );
        const read = Math.min(r ?? 0, prompt);
        const write = Math.min(w ?? 0, prompt - read);
        expect(bill).toEqual({
          promptTokens: prompt,
          cacheReadTokens: read,
          cacheWriteTokens: write,
          completionTokens: c,
          estimated: false,
          inputCostNano: partsCost(s.provider, prompt, read, write),
          outputCostNano: tokenCost(c as number, s.provider.outputPriceNano),
        });
      }),
    );
  });

  it('bills no cached part of a prompt it counted itself', () => {
    fc.assert(
      fc.property(served, choices, usage, holdNano, fc.boolean(), (s, n, u, hold, within) => {
        const bill = billFor(s, n, u, { holdNano: hold, withinHold: within });
        expect(bill.cacheReadTokens + bill.cacheWriteTokens).toBeLessThanOrEqual(bill.promptTokens);
        if (u.reportedPrompt === undefined) {
          expect(bill.cacheReadTokens).toBe(0);
          expect(bill.cacheWriteTokens).toBe(0);
        }
      }),
    );
  });

  it("keeps a prompt within the hold's bound of it, however the upstream splits it", () => {
    fc.assert(
      fc.property(served, choices, tokens, tokens, tokens, (s, n, p, r, w) => {
        fc.pre(p !== undefined && p <= s.promptBound);
        const bill = billFor(
          s,
          n,
          { reportedPrompt: p, reportedCompletion: 0, reportedCacheRead: r, reportedCacheWrite: w },
          { holdNano: 0, withinHold: false },
        );
        const provider = { ...s.provider } as ProviderConfig;
        expect(bill.inputCostNano).toBeLessThanOrEqual(promptCostBound(provider, s.promptBound));
      }),
    );
  });

  it('bills a Claude-priced prompt of 1,000 uncached, 2,000 cache-read and 3,000 cache-write tokens', () => {
    const claude = {
      inputPriceNano: 3_000_000_000,
      outputPriceNano: 15_000_000_000,
      cacheReadPriceNano: 300_000_000,
      cacheWritePriceNano: 3_750_000_000,
    };
    const bill = billFor(
      { provider: claude, cap: 100, promptBound: 10_000 },
      1,
      { reportedPrompt: 6_000, reportedCompletion: 7, reportedCacheRead: 2_000, reportedCacheWrite: 3_000 },
      { holdNano: 10 ** 9, withinHold: false },
    );
    // 1,000 × $3/M + 2,000 × $0.30/M + 3,000 × $3.75/M = $0.003 + $0.0006 + $0.01125.
    expect(bill.inputCostNano).toBe(3_000_000 + 600_000 + 11_250_000);
    expect(bill.outputCostNano).toBe(105_000);
    expect(bill).toMatchObject({ promptTokens: 6_000, cacheReadTokens: 2_000, cacheWriteTokens: 3_000 });
  });

  it('never charges a prompt more than the whole of it at its dearest price, whatever the rounding of its parts', () => {
    const tiny = { inputPriceNano: 1, outputPriceNano: 1, cacheReadPriceNano: 1, cacheWritePriceNano: 1 };
    const bill = billFor(
      { provider: tiny, cap: 1, promptBound: 3 },
      1,
      { reportedPrompt: 3, reportedCompletion: 0, reportedCacheRead: 1, reportedCacheWrite: 1 },
      { holdNano: 1, withinHold: false },
    );
    // Three parts of one token each round up to 1 n$ apiece; the whole prompt costs ceil(3 / 10^6) = 1.
    expect(bill.inputCostNano).toBe(1);
  });
});
