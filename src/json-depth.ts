/**
 * Deepest nesting of arrays and objects a JSON value may have: a client's request body, and an upstream's
 * answer body or stream event alike (an answer too deep is the upstream's fault: `bad_response`).
 */
export const MAX_JSON_DEPTH = 64;

/**
 * Most JSON values a request body may hold: every object, array, key, string, number, `true`, `false` and
 * `null` counts one. Far above what a real request carries (a long agent conversation with its tools holds
 * some thousands), it bounds what `JSON.parse` builds, whatever the body's size.
 */
export const MAX_JSON_VALUES = 100_000;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

export type JsonShapeProblem =
  | { kind: 'too_deep'; limit: number }
  | { kind: 'too_many_values'; limit: number };

/**
 * What makes a JSON text too costly to parse, read off the text before `JSON.parse` builds anything:
 * arrays and objects nested deeper than `maxDepth`, or more than `maxValues` values. One pass over the
 * characters, each string skipped to its closing quote, that stops at the first problem. It checks nothing
 * else: a text it passes may still be invalid JSON, which `JSON.parse` then refuses.
 */
export function jsonShapeProblem(
  text: string,
  maxDepth = MAX_JSON_DEPTH,
  maxValues = MAX_JSON_VALUES,
): JsonShapeProblem | undefined {
  const length = text.length;
  let depth = 0;
  let values = 0;
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      depth++;
      if (depth > maxDepth) return { kind: 'too_deep', limit: maxDepth };
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
      continue;
    } else if (c === QUOTE) {
      i = closingQuote(text, i);
    } else if (startsScalar(c)) {
      while (i + 1 < length && inScalar(text.charCodeAt(i + 1))) i++;
    } else {
      continue; // whitespace, ',' and ':'
    }
    values++;
    if (values > maxValues) return { kind: 'too_many_values', limit: maxValues };
  }
  return undefined;
}

/** The index of the quote that ends the string opened at `open` (the text's length if none does). */
function closingQuote(text: string, open: number): number {
  let quote = text.indexOf('"', open + 1);
  while (quote !== -1) {
    // Escaped when an odd number of backslashes precede it; each backslash is looked at once.
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return quote;
    quote = text.indexOf('"', quote + 1);
  }
  return text.length;
}

/** A number, `true`, `false` or `null` starts with '-', a digit, 't', 'f' or 'n'. */
function startsScalar(c: number): boolean {
  return c === 0x2d || (c >= 0x30 && c <= 0x39) || c === 0x74 || c === 0x66 || c === 0x6e;
}

/** Letters, digits, '.', '+' and '-': what the rest of a number or literal is made of. */
function inScalar(c: number): boolean {
  return (
    (c >= 0x30 && c <= 0x39) ||
    (c >= 0x61 && c <= 0x7a) ||
    (c >= 0x41 && c <= 0x5a) ||
    c === 0x2e ||
    c === 0x2b ||
    c === 0x2d
  );
}

/**
 * Whether a parsed JSON value nests arrays and objects deeper than `max`. It descends at most `max + 1`
 * levels, so the check itself cannot overflow the stack, and it allocates nothing; it runs before any
 * recursive work on the value (validation, hashing for an Idempotency-Key, `JSON.stringify` of a tool
 * call's arguments or of the answer) that a deeply nested value would overflow.
 */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  return deeperThan(value, 1, max);
}

function deeperThan(node: unknown, depth: number, max: number): boolean {
  if (typeof node !== 'object' || node === null) return false;
  if (depth > max) return true;
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) if (deeperThan(node[i], depth + 1, max)) return true;
    return false;
  }
  const record = node as Record<string, unknown>;
  for (const key in record) {
    if (Object.hasOwn(record, key) && deeperThan(record[key], depth + 1, max)) return true;
  }
  return false;
}
