import { describe, expect, it } from 'vitest';
import { jsonShapeProblem, MAX_JSON_DEPTH, MAX_JSON_VALUES } from '../../src/json-depth.js';

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
