import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { afterEach, describe, expect, it } from 'vitest';
import { TokenCounter } from '../../src/gateway/token-counter.js';

/** The longest the event loop went without a turn while `work` ran. */
async function longestStall<T>(work: Promise<T>): Promise<{ value: T; stallMs: number }> {
  let last = performance.now();
  let stallMs = 0;
  const tick = setInterval(() => {
    const now = performance.now();
    stallMs = Math.max(stallMs, now - last);
    last = now;
  }, 5);
  try {
    const value = await work;
    return { value, stallMs };
  } finally {
    clearInterval(tick);
  }
}

let counter: TokenCounter | undefined;
afterEach(async () => {
  await counter?.close();
  counter = undefined;
});

describe('TokenCounter: o200k counts off the event loop, bounded in time', () => {
  it('counts exactly what the tokenizer counts', async () => {
    counter = new TokenCounter(10_000);
    const texts = [
      'Hello, world!',
      'Ünïcödé and emoji 🎉',
      '',
      'the quiet harbor keeps its lanterns burning',
    ];
    const result = await counter.count(texts);
    expect(result).toEqual({ counts: texts.map((t) => countTokens(t)), exact: true });
  });

  it('a text the tokenizer is slow on gets byte counts at the deadline, and the loop never stalls', async () => {
    counter = new TokenCounter(300);
    // Warm: the thread has loaded the tokenizer, so the slow text really runs on it (and must be stopped).
    let warm = await counter.count(['warm']);
    for (let i = 0; i < 60 && !warm.exact; i++) warm = await counter.count(['warm']);
    expect(warm.exact).toBe(true);
    // A long run of one character: BPE merging is quadratic in it.
    const text = 'a'.repeat(1_000_000);
    const started = performance.now();
    const { value, stallMs } = await longestStall(counter.count([text, 'short']));
    const took = performance.now() - started;
    expect(value).toEqual({ counts: [1_000_000, 5], exact: false });
    expect(took).toBeGreaterThanOrEqual(290);
    expect(took).toBeLessThan(3_000);
    // Counted on the event loop, the count would be one stall as long as all of it; off it, no stall comes
    // near (a busy machine stretches both alike).
    expect(stallMs).toBeLessThan(took / 3);
    // The stuck thread was ended: counts are exact again on a new one once it has loaded the tokenizer
    // (a count asked while it loads gets byte counts at its deadline; the loading thread is left alone).
    let next = await counter.count(['Hello, world!']);
    for (let i = 0; i < 60 && !next.exact; i++) next = await counter.count(['Hello, world!']);
    expect(next).toEqual({ counts: [countTokens('Hello, world!')], exact: true });
  });

  it('jobs waiting behind a slow one keep their own deadlines', async () => {
    counter = new TokenCounter(400);
    const slow = counter.count(['b'.repeat(1_000_000)]);
    const queued = counter.count(['c'.repeat(1_000_000)]);
    const started = performance.now();
    const [a, b] = await Promise.all([slow, queued]);
    expect(a.exact).toBe(false);
    expect(b.exact).toBe(false);
    expect(performance.now() - started).toBeLessThan(3_000);
  });

  it('close() answers what is still waiting with byte counts', async () => {
    counter = new TokenCounter(60_000);
    const pending = counter.count(['d'.repeat(500_000)]);
    await new Promise((r) => setTimeout(r, 50));
    await counter.close();
    expect(await pending).toEqual({ counts: [500_000], exact: false });
  });
});
