import { describe, expect, it } from 'vitest';
import { type LatencySummary, Samples } from '../../bench/stats.js';
import {
  type PhaseFigures,
  readEnding,
  StreamTimer,
  streamGoals,
  usdToNano,
} from '../../bench/stream-measure.js';
import { nanoToUsd } from '../../src/money/money.js';

// `npm run bench:stream` times every streamed answer with StreamTimer and checks the goals with
// streamGoals; each rule is checked here on chunks and figures made by hand.

const event = (data: string) => `data: ${data}\n\n`;

describe('StreamTimer', () => {
  it('times the first data: bytes and each event at the read that completes it', () => {
    const gaps = new Samples(4);
    const timer = new StreamTimer(100, gaps);
    timer.onChunk(Buffer.from(event('{"a":1}') + event('{"a":2}')), 103); // two events in one read
    timer.onChunk(Buffer.from('data: {"a":3}\n'), 150); // the blank line comes in the next read
    timer.onChunk(Buffer.from(`\n${event('[DONE]')}`), 160);
    expect(timer.ttfbMs).toBe(3);
    expect(timer.events).toBe(4);
    // Gaps: 0 (the same read as the first event), 57 (103 → 160), 0 (the same read).
    const summary = gaps.summary();
    expect([summary.count, summary.p50, summary.max, summary.mean]).toEqual([3, 0, 57, 19]);
  });

  it('reads the bill and [DONE] from the tail, even after many chunks', () => {
    const timer = new StreamTimer(0, new Samples(4));
    for (let i = 0; i < 200; i++)
      timer.onChunk(Buffer.from(event(`{"choices":[{"delta":{"content":"${i}"}}]}`)), i);
    const bill = `{"choices":[],"usage":{"cost":0.0000321},"meta":{"cost":{"input":0.0000021,"output":0.00003,"total":0.0000321},"balance":${nanoToUsd(999_999_999_967_900)}}}`;
    timer.onChunk(Buffer.from(event(bill) + event('[DONE]')), 300);
    expect(readEnding(timer.tailText())).toEqual({
      done: true,
      costNano: 32_100,
      balanceNano: 999_999_999_967_900,
    });
  });
});

describe('readEnding', () => {
  it('says when a stream ended with an error event instead of [DONE]', () => {
    const ending = readEnding(`${event('{"choices":[]}')}${event('{"error":{"message":"upstream cut"}}')}`);
    expect(ending).toEqual({ done: false, error: 'upstream cut' });
  });

  it('finds no bill in an upstream stream (its usage chunk has no meta)', () => {
    expect(
      readEnding(`ices":[]}\n\n${event('{"choices":[],"usage":{"total_tokens":9}}')}${event('[DONE]')}`),
    ).toEqual({
      done: true,
    });
  });

  it('turns USD back into exact nanodollars up to the benchmark balances', () => {
    for (const nano of [1, 32_100, 999_999_993_456_400, 1_000_000_000_000_000, 2 ** 51 - 1]) {
      expect(usdToNano(nanoToUsd(nano))).toBe(nano);
    }
  });
});

describe('streamGoals', () => {
  const summary = (p50: number, p99: number): LatencySummary => ({
    count: 100,
    mean: p50,
    p50,
    p90: p99,
    p99,
    p999: p99,
    max: p99,
  });
  const phase = (ttfbP50: number, gapP99: number): PhaseFigures => ({
    streams: 100,
    errors: 0,
    ttfb: summary(ttfbP50, ttfbP50 * 2),
    gaps: summary(50, gapP99),
  });
  const statusOf = (goals: ReturnType<typeof streamGoals>) => goals.map((g) => g.status);

  it('passes within 1 ms of added TTFB p50 and 2 ms of added gap p99, exact billing and a clean ledger', () => {
    const goals = streamGoals(
      {
        bare: phase(1.2, 52),
        tollgate: phase(2.1, 53.9),
        concurrent: { streams: 4000, errors: 0, peakRssMb: 180 },
        billing: { billedNano: 123, balanceChangeNano: 123, streamsWithoutBill: 0 },
        ledgerOk: true,
      },
      1000,
    );
    expect(statusOf(goals)).toEqual(['PASS', 'PASS', 'PASS', 'PASS', 'PASS', 'PASS']);
    expect(goals[0]?.value).toBe('+0.90 ms (Tollgate 2.10, bare 1.20)');
  });

  it('fails past each bound, on any error and on a billing difference', () => {
    const goals = streamGoals(
      {
        bare: phase(1, 52),
        tollgate: phase(2.5, 54.5),
        concurrent: { streams: 4000, errors: 1, peakRssMb: 251 },
        billing: { billedNano: 123, balanceChangeNano: 124, streamsWithoutBill: 0 },
        ledgerOk: false,
      },
      1000,
    );
    expect(statusOf(goals)).toEqual(['FAIL', 'FAIL', 'FAIL', 'FAIL', 'FAIL', 'FAIL']);
  });

  it('says N/A for what was not measured: no bare proxy, no concurrency phase', () => {
    const goals = streamGoals({ bare: undefined, tollgate: phase(2, 50) }, 1000);
    expect(statusOf(goals)).toEqual(['N/A', 'N/A', 'N/A', 'N/A', 'N/A', 'N/A']);
  });
});
