import { formatNano } from '../money/money.js';
import type { UsageRow } from '../store/dashboard-types.js';

export const USAGE_CSV_HEADER = [
  'time',
  'request_id',
  'key_id',
  'key_name',
  'provider',
  'model',
  'prompt_tokens',
  'completion_tokens',
  'total_tokens',
  'usage_estimated',
  'cost_usd',
  'duration_ms',
  'status',
  'error_code',
  'http_status',
  // Last, so the columns before keep their places: 1, or a refusal count (docs/dashboard.md).
  'requests',
  // The parts of prompt_tokens read from and written to the upstream's cache (docs/api.md "Billing").
  'cache_read_tokens',
  'cache_write_tokens',
];

/**
 * One CSV field (RFC 4180 quoting). Text a spreadsheet would run as a formula (starting with = + - @,
 * tab or CR) is prefixed with `'`, as OWASP's CSV-injection guidance advises: key names are user input.
 */
export function csvField(value: string | number | boolean | null): string {
  if (value === null) return '';
  let text = String(value);
  if (typeof value === 'string' && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export function csvLine(values: readonly (string | number | boolean | null)[]): string {
  return `${values.map(csvField).join(',')}\r\n`;
}

/** One usage row as a CSV line; money as an exact decimal string of dollars. */
export function usageCsvLine(u: UsageRow): string {
  return csvLine([
    new Date(u.createdAt).toISOString(),
    u.requestId,
    u.keyId,
    u.keyName,
    u.provider,
    u.model,
    u.promptTokens,
    u.completionTokens,
    u.promptTokens + u.completionTokens,
    u.usageEstimated,
    formatNano(u.costNano),
    u.durationMs,
    u.status,
    u.errorCode,
    u.httpStatus,
    u.requests,
    u.cacheReadTokens,
    u.cacheWriteTokens,
  ]);
}
