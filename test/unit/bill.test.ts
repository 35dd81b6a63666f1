import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { billFor, type UsageCount } from '../../src/billing/billing.js';
import { tokenCost } from '../../src/money/money.js';

// The settle's money rule (docs/api.md, "Counted usage"), checked over arbitrary calls: what is charged for
// what an upstream reported and what Tollgate counted.

const served = fc.record({
  provider: fc.record({
    inputPriceNano: fc.integer({ min: 0, max: 200_000_000_000 }),
    outputPriceNano: fc.integer({ min: 0, max: 800_000_000_000 }),
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
  },
  { requiredKeys: ['reportedPrompt', 'reportedCompletion'] },
);
const choices = fc.integer({ min: 1, max: 8 });
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
          input: tokenCost(bill.promptTokens, s.provider.inputPriceNano),
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
});
