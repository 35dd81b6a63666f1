/**
 * How long the upstream asks us to wait before retrying, in milliseconds, or `undefined` when it does
 * not say. Reads `retry-after-ms` (milliseconds, as OpenAI sends it) first, then `retry-after`, which is
 * either delay-seconds or an HTTP date (https://www.rfc-editor.org/rfc/rfc9110#field.retry-after).
 * A date in the past gives 0.
 */
export function parseRetryAfterMs(
  headers: Record<string, string | undefined>,
  nowMs: number = Date.now(),
): number | undefined {
  const ms = parseNonNegativeNumber(headers['retry-after-ms']);
  if (ms !== undefined) return Math.ceil(ms);
  const raw = headers['retry-after']?.trim();
  if (raw === undefined || raw === '') return undefined;
  const seconds = parseNonNegativeNumber(raw);
  if (seconds !== undefined) return Math.ceil(seconds * 1000);
  // An HTTP date always names its day and month; this keeps `-5` from parsing as the year -5.
  if (!/[a-z]/i.test(raw)) return undefined;
  const date = Date.parse(raw);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - nowMs);
}

function parseNonNegativeNumber(raw: string | undefined): number | undefined {
  const text = raw?.trim();
  if (text === undefined || !/^\d+(\.\d+)?$/.test(text)) return undefined;
  const value = Number(text);
  return Number.isFinite(value) ? value : undefined;
}
