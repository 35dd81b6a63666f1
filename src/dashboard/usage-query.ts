import { GatewayError } from '../errors.js';
import { isProviderName } from '../providers/types.js';
import type { UsageCursor, UsageFilters } from '../store/dashboard-types.js';

const DAY_MS = 86_400_000;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

function invalid(param: string, message: string): GatewayError {
  return new GatewayError('invalid_request', message, { param });
}

/** `YYYY-MM-DD` → the start of that UTC day in epoch ms. */
export function parseDay(value: string, param: string): number {
  const m = DATE.exec(value);
  const ms = m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])) : Number.NaN;
  if (!m || Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== value) {
    throw invalid(param, `"${param}" must be a date as YYYY-MM-DD.`);
  }
  return ms;
}

/** The filters of the usage list and export: key, provider, status, and a UTC day range (inclusive). */
export function usageFilters(q: Record<string, string | undefined>): UsageFilters {
  const filters: UsageFilters = {};
  if (q.key_id !== undefined) {
    if (!/^[A-Za-z0-9_]{1,64}$/.test(q.key_id)) throw invalid('key_id', '"key_id" is not a key id.');
    filters.keyId = q.key_id;
  }
  if (q.provider !== undefined) {
    if (!isProviderName(q.provider)) throw invalid('provider', '"provider" is not a provider name.');
    filters.provider = q.provider;
  }
  if (q.status !== undefined) {
    if (q.status !== 'ok' && q.status !== 'error') throw invalid('status', '"status" must be ok or error.');
    filters.status = q.status;
  }
  if (q.from !== undefined) filters.from = parseDay(q.from, 'from');
  if (q.to !== undefined) filters.to = parseDay(q.to, 'to') + DAY_MS;
  if (filters.from !== undefined && filters.to !== undefined && filters.from >= filters.to) {
    throw invalid('to', '"to" must not be before "from".');
  }
  return filters;
}

/** Opaque page cursor: base64url of `<created_at ms>.<request id>` of the last row shown. */
export function encodeCursor(cursor: UsageCursor): string {
  return Buffer.from(`${cursor.createdAt}.${cursor.requestId}`).toString('base64url');
}

export function decodeCursor(value: string): UsageCursor {
  const text = /^[A-Za-z0-9_-]{1,400}$/.test(value) ? Buffer.from(value, 'base64url').toString('utf8') : '';
  const m = /^(\d{1,16})\.([A-Za-z0-9_-]{1,200})$/.exec(text);
  if (!m) throw invalid('cursor', '"cursor" is not a cursor this API returned.');
  return { createdAt: Number(m[1]), requestId: m[2] as string };
}
