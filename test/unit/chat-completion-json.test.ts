import { describe, expect, it } from 'vitest';
import { chatCompletionBody, chatCompletionJson, usdJson } from '../../src/api/chat-completion-body.js';
import type { ChatCompletion } from '../../src/gateway/types.js';
import { seededRandom } from '../resilience/process-helpers.js';

// The hot route writes its body with chatCompletionJson; it must be exactly what JSON.stringify makes of
// the body's definition, for any text a model may write and any amounts.

const base: ChatCompletion = {
  id: 'chatcmpl-01jd6v4x0000000000000000',
  created: 1_764_000_000,
  model: 'deepseek-chat',
  provider: 'prov-deepseek',
  text: 'Hello there.',
  finishReason: 'stop',
  promptTokens: 9,
  completionTokens: 14,
  usageEstimated: false,
  inputCostNano: 2_448,
  outputCostNano: 15_288,
  balanceNano: 9_999_975_500,
  durationMs: 54,
};

const same = (c: ChatCompletion) => expect(chatCompletionJson(c)).toBe(JSON.stringify(chatCompletionBody(c)));

/** Text with the characters JSON must escape, non-ASCII, astral and lone surrogates among plain ones. */
function randomText(random: () => number): string {
  const pieces = [
    'a',
    ' ',
    '"',
    '\\',
    '\n',
    '\r',
    '\t',
    '\u0000',
    '\u001f',
    '\u007f',
    'é',
    '漢',
    '😀',
    '\u2028',
    '/',
  ];
  let out = '';
  const length = Math.floor(random() * 40);
  for (let i = 0; i < length; i++) {
    const r = random();
    if (r < 0.8) out += pieces[Math.floor(random() * pieces.length)];
    else if (r < 0.9) out += String.fromCharCode(0xd800 + Math.floor(random() * 0x800));
    else out += String.fromCharCode(Math.floor(random() * 0x10000));
  }
  return out;
}

describe('the chat completion body as written on the hot route', () => {
  it('is JSON.stringify of the body for a usual answer', () => {
    same(base);
    expect(JSON.parse(chatCompletionJson(base))).toEqual(chatCompletionBody(base));
  });

  it('is JSON.stringify of the body for 5,000 generated completions', () => {
    const random = seededRandom(20261126);
    const amount = () =>
      [0, 1, 999, 10 ** 9, 2 ** 53 - 1, Math.floor(random() * 10 ** 12), Math.floor(random() * 10 ** 18)][
        Math.floor(random() * 7)
      ] as number;
    for (let i = 0; i < 5_000; i++) {
      same({
        ...base,
        id: `chatcmpl-${randomText(random)}`,
        model: randomText(random),
        text: randomText(random),
        finishReason: (['stop', 'length', 'content_filter', 'tool_calls'] as const)[i % 4] as 'stop',
        promptTokens: Math.floor(random() * 2_000_000),
        completionTokens: Math.floor(random() * 200_000),
        inputCostNano: amount(),
        outputCostNano: amount(),
        balanceNano: amount(),
        durationMs: Math.floor(random() * 600_000),
        created: Math.floor(random() * 2 ** 32),
      });
    }
  });

  it('writes a number JSON cannot hold as null, as JSON.stringify does', () => {
    same({ ...base, durationMs: Number.NaN });
    same({ ...base, balanceNano: Number.POSITIVE_INFINITY });
    same({ ...base, inputCostNano: -0 });
  });
});

describe('a dollar figure written from its nanodollars', () => {
  const asJson = (nano: number) => JSON.stringify(nano / 1_000_000_000);

  it('is the text JSON.stringify gives the quotient, at the edges of the exact range and beyond', () => {
    const edges = [
      0,
      -0,
      1,
      999,
      1000,
      1001,
      1010,
      10_000,
      999_999_999,
      10 ** 9,
      10 ** 9 + 1,
      2 ** 31 - 1,
      2 ** 31,
    ];
    const more = [
      10 ** 15 - 1,
      10 ** 15,
      10 ** 15 + 1,
      2 ** 53 - 1,
      123_456_789_012_345,
      100_000_000_000_001,
    ];
    for (const nano of [
      ...edges,
      ...more,
      -1000,
      -123_456_789,
      1000.5,
      Number.NaN,
      Number.POSITIVE_INFINITY,
    ]) {
      expect(usdJson(nano), String(nano)).toBe(asJson(nano));
    }
  });

  it('is the text JSON.stringify gives the quotient for 200,000 random amounts of every magnitude', () => {
    const random = seededRandom(20261127);
    let mismatches = 0;
    for (let i = 0; i < 200_000; i++) {
      // Uniform over the number of digits (1 to 16), then over the digits; a third end in zeros.
      const digits = 1 + Math.floor(random() * 16);
      let nano = Math.floor(random() * 10 ** digits);
      if (i % 3 === 0) nano -= nano % 10 ** Math.floor(random() * 9);
      if (usdJson(nano) !== asJson(nano)) mismatches++;
    }
    expect(mismatches).toBe(0);
  });
});
