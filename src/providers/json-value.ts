import { MAX_JSON_DEPTH, nestsDeeperThan } from '../json-depth.js';
import { UpstreamError } from './types.js';

/** A JSON object (not null, not an array): the only shape an upstream completion body can have. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The `UpstreamError` for a 2xx answer that cannot be read as a completion (retryable: try elsewhere). */
export function badResponse(message: string, status?: number): UpstreamError {
  return new UpstreamError('bad_response', message, status === undefined ? {} : { status });
}

/**
 * Throws `bad_response` for a value an upstream sent nested deeper than `MAX_JSON_DEPTH` (the bound of a
 * client's body too): no answer needs more, and the recursive work an answer meets later (`JSON.stringify`
 * of a tool call's arguments, of log probabilities, of the whole answer) would overflow the stack on one
 * nested thousands of levels deep. Checked once, where each body or event is parsed.
 */
export function checkDepth(value: unknown, what: string, status?: number): void {
  if (nestsDeeperThan(value, MAX_JSON_DEPTH)) {
    throw badResponse(`upstream sent ${what} nested more than ${MAX_JSON_DEPTH} levels deep`, status);
  }
}

/**
 * Reads one token count from an upstream usage object. Absent or `null` means "not reported" and gives
 * `undefined` (never 0). Anything else that is not a non-negative finite integer makes the whole answer
 * unreadable: billing must not guess from a malformed count.
 */
export function readTokenCount(usage: Record<string, unknown>, field: string): number | undefined {
  const value = usage[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw badResponse(`upstream usage field ${field} is not a non-negative integer`);
  }
  return value;
}

/** Sums counts of which at least one was reported; `undefined` when none was. */
export function sumReported(...counts: (number | undefined)[]): number | undefined {
  let total: number | undefined;
  for (const count of counts) {
    if (count !== undefined) total = (total ?? 0) + count;
  }
  return total;
}

/**
 * The JSON object one event of an upstream's stream carries. Text that is not JSON, JSON that is not
 * an object, or an object nested too deep (`checkDepth`) cannot be read (`bad_response`).
 */
export function parseEventObject(data: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(data) as unknown;
  } catch {
    throw badResponse('upstream sent a stream event that is not JSON');
  }
  if (!isRecord(value)) throw badResponse('upstream sent a stream event that is not a JSON object');
  checkDepth(value, 'a stream event');
  return value;
}
