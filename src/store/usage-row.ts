import { toNumber, type UsageTable } from './schema.js';
import type { UsageRecord } from './types.js';

/**
 * A call's usage row, both ways: a record as the row's values (`usageValues`, in the order of
 * `USAGE_COLUMNS`) and a row as a record (`toUsage`). SQLite's prepared inserts, PostgreSQL's statements
 * and the query builder's inserts (`usageRowOf`) all write by `usageValues`; the one exception is the
 * plain answer's shorter list of SQLite's ledger (`answeredUsageValues`, below).
 *
 * The usage table's columns in insert order, with their PostgreSQL types: a column added to the table is
 * added here once (the bench's bulk loader checks its own list against the table).
 */
export const USAGE_COLUMN_TYPES = {
  request_id: 'text',
  account_id: 'text',
  key_id: 'text',
  provider: 'text',
  model: 'text',
  prompt_tokens: 'bigint',
  completion_tokens: 'bigint',
  usage_estimated: 'integer',
  input_cost_nano: 'bigint',
  output_cost_nano: 'bigint',
  shortfall_nano: 'bigint',
  status: 'text',
  error_code: 'text',
  http_status: 'integer',
  duration_ms: 'bigint',
  client_gone: 'integer',
  created_at: 'bigint',
  charged_nano: 'bigint',
  cache_read_tokens: 'bigint',
  cache_write_tokens: 'bigint',
} as const;

export const USAGE_COLUMNS = Object.keys(USAGE_COLUMN_TYPES) as (keyof typeof USAGE_COLUMN_TYPES)[];

/**
 * A usage row's values in `USAGE_COLUMNS` order. `chargedNano` is what the settle took from the account
 * for this request (0 for a failed or refused one): the row is the charge's record.
 */
export function usageValues(
  u: UsageRecord,
  shortfallNano: number,
  chargedNano: number,
): (string | number | null)[] {
  return [
    u.requestId,
    u.accountId,
    u.keyId,
    u.provider,
    u.model,
    u.promptTokens,
    u.completionTokens,
    u.usageEstimated ? 1 : 0,
    u.inputCostNano,
    u.outputCostNano,
    shortfallNano,
    u.status,
    u.errorCode,
    u.httpStatus,
    u.durationMs,
    u.clientGone ? 1 : 0,
    u.createdAt,
    chargedNano,
    u.cacheReadTokens ?? 0,
    u.cacheWriteTokens ?? 0,
  ];
}

/** A usage row as the query builder inserts it: the values of `usageValues`, by column. */
export function usageRowOf(values: readonly (string | number | null)[]): UsageTable {
  const row: Record<string, string | number | null> = {};
  for (let i = 0; i < USAGE_COLUMNS.length; i++) row[USAGE_COLUMNS[i] as string] = values[i] ?? null;
  return row as unknown as UsageTable;
}

/** A usage row read back as the record it was written from. */
export function toUsage(row: UsageTable): UsageRecord {
  return {
    requestId: row.request_id,
    accountId: row.account_id,
    keyId: row.key_id,
    provider: row.provider,
    model: row.model,
    promptTokens: toNumber(row.prompt_tokens),
    cacheReadTokens: toNumber(row.cache_read_tokens),
    cacheWriteTokens: toNumber(row.cache_write_tokens),
    completionTokens: toNumber(row.completion_tokens),
    usageEstimated: row.usage_estimated === 1,
    inputCostNano: toNumber(row.input_cost_nano),
    outputCostNano: toNumber(row.output_cost_nano),
    status: row.status === 'ok' ? 'ok' : 'error',
    errorCode: row.error_code,
    httpStatus: row.http_status,
    durationMs: toNumber(row.duration_ms),
    clientGone: row.client_gone === 1,
    createdAt: toNumber(row.created_at),
  };
}

/**
 * The usage row of an answered call settled in full — status `ok`, no error, HTTP 200, usage from the
 * upstream, the client still there, no shortfall — has six columns whose values never change. SQLite's
 * ledger inserts such rows with those six written into the statement, as each value bound costs a native
 * call and, for text, a copy into UTF-8. `ANSWERED_USAGE_SQL` is the statement's values list;
 * `answeredUsageValues` gives the rest, in `USAGE_COLUMNS` order.
 */
const ANSWERED_CONSTANTS: Partial<Record<(typeof USAGE_COLUMNS)[number], string>> = {
  usage_estimated: '0',
  shortfall_nano: '0',
  status: "'ok'",
  error_code: 'null',
  http_status: '200',
  client_gone: '0',
};

export const ANSWERED_USAGE_SQL = USAGE_COLUMNS.map((c) => ANSWERED_CONSTANTS[c] ?? '?').join(', ');

/** Whether `u` settled with `shortfallNano` is such a row (`answeredUsageValues` may write it). */
export function isPlainAnswer(u: UsageRecord, shortfallNano: number): boolean {
  return (
    u.status === 'ok' &&
    u.errorCode === null &&
    u.httpStatus === 200 &&
    !u.usageEstimated &&
    !u.clientGone &&
    shortfallNano === 0
  );
}

/**
 * The values of an answered call's usage row that are not constant, in `USAGE_COLUMNS` order: those of
 * `usageValues` without the six. Written out rather than picked from `usageValues` per call: the settle of
 * every answered call builds this array, and one array literal is cheaper than building the full row and
 * copying from it. test/store/sqlite-engine.test.ts writes one record both ways and compares the rows, so
 * a column added to `usageValues` and not here fails there.
 */
export function answeredUsageValues(u: UsageRecord, chargedNano: number): (string | number | null)[] {
  return [
    u.requestId,
    u.accountId,
    u.keyId,
    u.provider,
    u.model,
    u.promptTokens,
    u.completionTokens,
    u.inputCostNano,
    u.outputCostNano,
    u.durationMs,
    u.createdAt,
    chargedNano,
    u.cacheReadTokens ?? 0,
    u.cacheWriteTokens ?? 0,
  ];
}
