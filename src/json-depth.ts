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
  return new JsonShapeScan(maxDepth, maxValues).feed(text);
}

/**
 * `jsonShapeProblem` over a text that arrives in pieces (a request body, chunk by chunk): `feed` each
 * piece in order; the piece that holds the first problem reports it, so a body can be refused before the
 * rest of it is read. A string, number or literal may be cut anywhere between two pieces.
 */
export class JsonShapeScan {
  private depth = 0;
  private values = 0;
  /** The last piece ended inside a string; `escaped`: right after a backslash that escapes what follows. */
  private inString = false;
  private escaped = false;
  /** The last piece ended inside a number or literal. */
  private inScalar = false;

  constructor(
    private readonly maxDepth = MAX_JSON_DEPTH,
    private readonly maxValues = MAX_JSON_VALUES,
  ) {}

  feed(text: string): JsonShapeProblem | undefined {
    const length = text.length;
    let i = 0;
    if (this.inString) {
      i = this.closeString(text, 0) + 1;
    } else if (this.inScalar) {
      while (i < length && inScalar(text.charCodeAt(i))) i++;
      this.inScalar = i === length;
    }
    for (; i < length; i++) {
      const c = text.charCodeAt(i);
      if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        this.depth++;
        if (this.depth > this.maxDepth) return { kind: 'too_deep', limit: this.maxDepth };
      } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
        this.depth--;
        continue;
      } else if (c === QUOTE) {
        i = this.closeString(text, i + 1);
      } else if (startsScalar(c)) {
        while (i + 1 < length && inScalar(text.charCodeAt(i + 1))) i++;
        this.inScalar = i + 1 === length;
      } else {
        continue; // whitespace, ',' and ':'
      }
      this.values++;
      if (this.values > this.maxValues) return { kind: 'too_many_values', limit: this.maxValues };
    }
    return undefined;
  }

  /**
   * The index of the quote that ends the string read from `from` on, or the text's length when the piece
   * ends first (`inString` then says so, and `escaped` whether its last backslash escapes what follows).
   */
  private closeString(text: string, from: number): number {
    // A backslash that ended the last piece escapes this piece's first character.
    const start = this.escaped ? from + 1 : from;
    this.escaped = false;
    this.inString = false;
    let quote = text.indexOf('"', start);
    while (quote !== -1) {
      // Escaped when an odd number of backslashes (of this piece) precede it; each is looked at once.
      if (backslashesBefore(text, quote, start) % 2 === 0) return quote;
      quote = text.indexOf('"', quote + 1);
    }
    this.inString = true;
    // An empty piece leaves the pending escape pending.
    this.escaped = start > text.length || backslashesBefore(text, text.length, start) % 2 === 1;
    return text.length;
  }
}

/** How many backslashes run right before `at`, none before `start`. */
function backslashesBefore(text: string, at: number, start: number): number {
  let n = 0;
  while (at - 1 - n >= start && text.charCodeAt(at - 1 - n) === BACKSLASH) n++;
  return n;
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
