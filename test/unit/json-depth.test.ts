import { describe, expect, it } from 'vitest';
import { JsonShapeScan, jsonShapeProblem, MAX_JSON_DEPTH, MAX_JSON_VALUES } from '../../src/json-depth.js';

const nest = (n: number): string => {
  let v: unknown = 'x';
  for (let i = 0; i < n; i++) v = i % 2 ? [v] : { v };
  return JSON.stringify(v);
};

/** A JSON array of `n` copies of `item`. */
const arrayOf = (n: number, item: string): string => `[${new Array(n).fill(item).join(',')}]`;

describe('jsonShapeProblem: nesting and value count read off the text, before JSON.parse', () => {
  it('measures arrays and objects alike, at the limit and one past it', () => {
    expect(jsonShapeProblem(nest(MAX_JSON_DEPTH))).toBeUndefined();
    expect(jsonShapeProblem(nest(MAX_JSON_DEPTH + 1))).toEqual({ kind: 'too_deep', limit: MAX_JSON_DEPTH });
    expect(jsonShapeProblem('['.repeat(200_000))).toEqual({ kind: 'too_deep', limit: MAX_JSON_DEPTH });
    expect(jsonShapeProblem('{"messages":[{"role":"user","content":"hi"}]}')).toBeUndefined();
  });

  it('does not count brackets, quotes or backslashes inside strings', () => {
    const inString = JSON.stringify({ content: `${'['.repeat(1000)}"\\${'{'.repeat(1000)}` });
    expect(jsonShapeProblem(inString, 2, 3)).toBeUndefined();
    // A string ending in an escaped backslash ends at the quote after it.
    expect(jsonShapeProblem('["\\\\",[[1]]]', 2)).toEqual({ kind: 'too_deep', limit: 2 });
    expect(jsonShapeProblem('["\\"",[1]]', 2)).toBeUndefined();
  });

  it('counts every value, keys included: objects, arrays, strings, numbers and literals', () => {
    // {} "a" [] 1 -2.5e+3 true false null, and the outer array: 9 values.
    const text = '[{"a":[]}, 1, -2.5e+3, true, false, null]';
    expect(jsonShapeProblem(text, MAX_JSON_DEPTH, 9)).toBeUndefined();
    expect(jsonShapeProblem(text, MAX_JSON_DEPTH, 8)).toEqual({ kind: 'too_many_values', limit: 8 });
  });

  it.each([
    ['empty objects', '{}'],
    ['empty arrays', '[]'],
    ['numbers', '1'],
    ['strings', '"a"'],
  ])('refuses more than MAX_JSON_VALUES %s, and stops reading there', (_what, item) => {
    expect(jsonShapeProblem(arrayOf(MAX_JSON_VALUES - 1, item))).toBeUndefined();
    expect(jsonShapeProblem(arrayOf(MAX_JSON_VALUES, item))).toEqual({
      kind: 'too_many_values',
      limit: MAX_JSON_VALUES,
    });
  });

  it('passes long strings and malformed text on to JSON.parse', () => {
    expect(jsonShapeProblem(JSON.stringify({ content: 'x'.repeat(1 << 20) }))).toBeUndefined();
    expect(jsonShapeProblem('{"unterminated')).toBeUndefined();
    expect(jsonShapeProblem(']]]}}}')).toBeUndefined();
  });
});

describe('JsonShapeScan: the same reading over a text that arrives in pieces', () => {
  /** What a scan fed `pieces` in order reports: the first problem, and the piece that reported it. */
  const inPieces = (pieces: string[], maxDepth: number, maxValues: number) => {
    const scan = new JsonShapeScan(maxDepth, maxValues);
    for (const [at, piece] of pieces.entries()) {
      const problem = scan.feed(piece);
      if (problem !== undefined) return { problem, at };
    }
    return undefined;
  };

  it('cut at every place, in two and three pieces, finds what the whole text shows', () => {
    const texts = [
      '["\\\\",[[1]]]',
      '["\\"",[1]]',
      '["a\\\\\\"[[b",[[-12.5e+3]],true]',
      '{"k":"\\u0022[","n":[null,false,[{"x":123456}]]}',
      '[1,22,333,[4444,[55555]],"\\\\",[[[]]]]',
    ];
    for (const text of texts) {
      for (const [depth, values] of [
        [2, 100],
        [3, 100],
        [MAX_JSON_DEPTH, 5],
        [MAX_JSON_DEPTH, 8],
        [MAX_JSON_DEPTH, 100],
      ] as const) {
        const whole = jsonShapeProblem(text, depth, values);
        for (let a = 0; a <= text.length; a++) {
          const two = inPieces([text.slice(0, a), text.slice(a)], depth, values);
          expect(two?.problem, `${text} cut at ${a}`).toEqual(whole);
          for (let b = a; b <= text.length; b++) {
            const three = inPieces([text.slice(0, a), text.slice(a, b), text.slice(b)], depth, values);
            expect(three?.problem, `${text} cut at ${a} and ${b}`).toEqual(whole);
          }
        }
      }
    }
  });

  it('one character at a time, and reports the problem at the piece that holds it', () => {
    const text = arrayOf(MAX_JSON_VALUES, '{}');
    expect(inPieces(text.split(''), MAX_JSON_DEPTH, MAX_JSON_VALUES)).toEqual({
      problem: { kind: 'too_many_values', limit: MAX_JSON_VALUES },
      // '[' then '{}' and ',' per value: the (MAX_JSON_VALUES + 1)th value opens at this character.
      at: 1 + 3 * (MAX_JSON_VALUES - 1),
    });
    const quoted = '"\\\\\\"[[["';
    expect(inPieces(['[', ...quoted.split(''), ']'], 1, 100)).toBeUndefined();
  });
});
