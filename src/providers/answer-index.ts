import { badResponse } from './json-value.js';

/**
 * The most tool calls one choice of a streamed OpenAI-compatible answer may carry, and the bound of a
 * tool call's `index` there: far beyond what a model calls in one turn, and small enough that an upstream
 * numbering its calls wildly cannot make the gateway keep a call per number.
 */
export const MAX_TOOL_CALLS_PER_CHOICE = 128;

/**
 * The bound of an Anthropic content block's `index` in a stream: an answer is a few blocks of text,
 * thinking and tool use, server tools add a few per use; a number beyond this is the upstream's fault.
 */
export const MAX_CONTENT_BLOCKS = 1024;

/**
 * An index an upstream gave a choice, a tool call or a content block, read against `limit` (for a choice:
 * the `n` choices asked for; an upstream that numbers one beyond them answers what was not asked). Absent
 * or `null` is `fallback` (the element's position, or 0 where the format leaves out index 0). Anything
 * that is not a whole number from 0 to `limit` − 1 makes the answer unreadable (`bad_response`): never
 * a gap for the gateway to walk or fill.
 */
export function indexWithin(value: unknown, fallback: number, limit: number, what: string): number {
  const index = value === undefined || value === null ? fallback : value;
  if (typeof index === 'number' && Number.isSafeInteger(index) && index >= 0 && index < limit) return index;
  const shown = typeof index === 'number' ? String(index) : `of type ${typeof index}`;
  throw badResponse(`upstream sent a ${what} index ${shown}, outside 0–${limit - 1}`);
}
