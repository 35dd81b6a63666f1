import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { afterEach, describe, expect, it } from 'vitest';
import { type TokenCount, TokenCounter } from '../../src/gateway/token-counter.js';

/** A deterministic source of variety (LCG), so a failure can be replayed. */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (Math.imul(s, 1103515245) + 12345) & 0x7fffffff;
    return s / 0x7fffffff;
  };
}

/** A made-up word of 2–11 lowercase letters. */
function word(next: () => number): string {
  let w = '';
  const n = 2 + Math.floor(next() * 10);
  for (let i = 0; i < n; i++) w += String.fromCharCode(97 + Math.floor(next() * 26));
  return w;
}

/**
 * About `chars` characters of words one space apart, drawn from `vocabulary` words (all made up when it
 * is not given; a small one keeps the tokenizer quick, its merges cached).
 */
function words(chars: number, seed: number, vocabulary?: readonly string[]): string {
  const next = random(seed);
  const out: string[] = [];
  let length = 0;
  while (length < chars) {
    const w = vocabulary ? (vocabulary[Math.floor(next() * vocabulary.length)] as string) : word(next);
    out.push(w);
    length += w.length + 1;
  }
  return out.join(' ');
}

const next = random(42);
const VOCABULARY = Array.from({ length: 2_000 }, () => word(next));

/** Text of every kind the pre-tokenizer treats apart: case, contractions, digits, punctuation, lines. */
function mixed(chars: number, seed: number): string {
  const next = random(seed);
  const bits = [
    'Hello',
    'WORLD',
    "don't",
    "It's",
    'naïve',
    'café',
    '🎉',
    '東京は',
    '12345',
    '3.14',
    '—',
    ',',
    '.',
    '!?',
    '\n',
    '\n\n',
    '  ',
    '\t',
    '/path/to',
    'x',
    'MixedCase',
    'ok',
    '、',
    '。',
    '大阪',
    'snake_case',
    "l'été",
    'e\u0301t\u0301e',
    'a-b',
    '😀x',
    'über',
    '(call)',
  ];
  let text = '';
  while (text.length < chars) {
    text += bits[Math.floor(next() * bits.length)];
    text += next() < 0.7 ? ' ' : '';
  }
  return text;
}

let counter: TokenCounter | undefined;
afterEach(async () => {
  await counter?.close();
  counter = undefined;
});

/** Until both of the counter's threads have loaded the tokenizer: for short jobs, and for long ones. */
async function warm(c: TokenCounter): Promise<void> {
  for (const text of ['warm', words(3_000, 9, VOCABULARY)]) {
    let result = await c.count([text]);
    for (let i = 0; i < 60 && !result.exact; i++) result = await c.count([text]);
    expect(result.exact).toBe(true);
  }
}

describe('TokenCounter: long texts in pieces, owners in turns', () => {
  it('counts long texts in pieces exactly as the tokenizer counts them whole', async () => {
    counter = new TokenCounter(60_000);
    const texts = [
      words(30_000, 1),
      mixed(30_000, 2),
      mixed(30_000, 3),
      '',
      'short',
      `${words(9_000, 4)}\n${mixed(9_000, 5)}`,
      ...Array.from({ length: 40 }, (_, i) => mixed(8_000, 10 + i)),
      ...Array.from({ length: 300 }, (_, i) => mixed(40, 100 + i)),
    ];
    const result = await counter.count(texts);
    expect(result).toEqual({ counts: texts.map((t) => countTokens(t)), exact: true });
  });

  it('a long text holding a special token gets byte counts, as it does whole', async () => {
    counter = new TokenCounter(60_000);
    const text = `${words(20_000, 6)} <|fim_prefix|> ${words(20_000, 7)}`;
    expect(() => countTokens(text)).toThrow(/special token/);
    expect(await counter.count([text, 'fine'])).toEqual({
      counts: [Buffer.byteLength(text), 4],
      exact: false,
    });
  });

  it("one owner's 40 long jobs do not hold up another owner's short ones", { timeout: 120_000 }, async () => {
    // No deadline in reach: what is measured is the order jobs finish in, not time.
    counter = new TokenCounter(100_000);
    await warm(counter);
    const flood = Array.from({ length: 40 }, (_, i) => words(150_000, 1_000 + i, VOCABULARY));
    let floodDone = 0;
    const floods = flood.map((text) =>
      (counter as TokenCounter).count([text], 'account-a').then((r) => {
        floodDone++;
        return r;
      }),
    );
    // The flood is under way: its first job is counted.
    await floods[0];
    const small = Array.from({ length: 4 }, (_, i) => `Hello number ${i}, how are you today?`);
    const victims = small.map((text) =>
      (counter as TokenCounter)
        .count([text], 'account-c')
        .then((result) => ({ result, floodDoneBefore: floodDone })),
    );
    const answered = await Promise.all(victims);
    answered.forEach(({ result }, i) => {
      expect(result).toEqual({ counts: [countTokens(small[i] as string)], exact: true });
    });
    // Counted one after the other, all four would wait for the 39 jobs queued before them.
    const latest = Math.max(...answered.map((a) => a.floodDoneBefore));
    expect(latest).toBeLessThanOrEqual(3);
    const results: TokenCount[] = await Promise.all(floods);
    expect(results.every((r) => r.exact)).toBe(true);
    expect(results.map((r) => r.counts[0])).toEqual(flood.map((t) => countTokens(t)));
  });

  it("a short job is counted between the pieces of another owner's long text", async () => {
    counter = new TokenCounter(100_000);
    await warm(counter);
    let longSettled = false;
    const long = counter.count([words(1_000_000, 3_000, VOCABULARY)], 'account-a').then((r) => {
      longSettled = true;
      return r;
    });
    const short = await counter.count(['Hello, world!'], 'account-c');
    expect(short).toEqual({ counts: [countTokens('Hello, world!')], exact: true });
    expect(longSettled).toBe(false);
    expect((await long).exact).toBe(true);
  });

  it("an owner's short job goes ahead of its own long ones", { timeout: 120_000 }, async () => {
    counter = new TokenCounter(100_000);
    await warm(counter);
    let longDone = 0;
    const longs = Array.from({ length: 10 }, (_, i) =>
      (counter as TokenCounter).count([words(150_000, 2_000 + i, VOCABULARY)], 'account-a').then(() => {
        longDone++;
      }),
    );
    await longs[0];
    const short = await (counter as TokenCounter)
      .count(['a short question'], 'account-a')
      .then((result) => ({ result, longDoneBefore: longDone }));
    expect(short.result).toEqual({ counts: [countTokens('a short question')], exact: true });
    expect(short.longDoneBefore).toBeLessThanOrEqual(3);
    await Promise.all(longs);
  });

  it('a long text cut in pieces, past its deadline, leaves its thread running', async () => {
    counter = new TokenCounter(100);
    await warm(counter);
    // The thread of long texts (short ones have a thread of their own).
    const pool = (counter as unknown as { large: { threads: unknown[] } }).large.threads;
    const [thread] = pool;
    const text = words(2_000_000, 4_000, VOCABULARY);
    expect(await counter.count([text], 'account-a')).toEqual({
      counts: [Buffer.byteLength(text)],
      exact: false,
    });
    // Its piece then running was let finish: the thread that had loaded the tokenizer still counts.
    expect(pool).toEqual([thread]);
    expect(await counter.count(['Hello, world!'], 'account-b')).toEqual({
      counts: [countTokens('Hello, world!')],
      exact: true,
    });
  });

  it('with one thread for long texts, a short job is counted while a stuck long text holds it', async () => {
    counter = new TokenCounter(15_000);
    await warm(counter);
    // A long run of one character, which cannot be cut: the thread of long texts is stuck on it for minutes.
    let stuckSettled = false;
    const stuck = counter.count(['a'.repeat(1_000_000)], 'account-a').then((r) => {
      stuckSettled = true;
      return r;
    });
    // Short jobs, the same owner's and another's, are counted apart (loading its thread may take a few).
    let short = await counter.count(['Hello, world!'], 'account-b');
    for (let i = 0; i < 60 && !short.exact; i++) short = await counter.count(['Hello, world!'], 'account-b');
    expect(short).toEqual({ counts: [countTokens('Hello, world!')], exact: true });
    expect(await counter.count(['a question', 'and its answer'], 'account-a')).toEqual({
      counts: [countTokens('a question'), countTokens('and its answer')],
      exact: true,
    });
    expect(stuckSettled).toBe(false);
    await counter.close();
    expect(await stuck).toEqual({ counts: [1_000_000], exact: false });
  });

  it('with two threads, a short job is counted while a stuck one holds the other', async () => {
    counter = new TokenCounter(15_000, { threads: 2 });
    await warm(counter);
    // A long run of one character: BPE merging is quadratic in it; this one would take minutes.
    let stuckSettled = false;
    const stuck = counter.count(['a'.repeat(1_000_000)], 'account-a').then((r) => {
      stuckSettled = true;
      return r;
    });
    const short = await counter.count(['Hello, world!'], 'account-b');
    expect(short).toEqual({ counts: [countTokens('Hello, world!')], exact: true });
    expect(stuckSettled).toBe(false);
    await counter.close();
    expect(await stuck).toEqual({ counts: [1_000_000], exact: false });
  });
});
