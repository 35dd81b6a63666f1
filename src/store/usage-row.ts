import type { UsageRecord } from './types.js';

/**
 * The usage table's columns in insert order, with their PostgreSQL types: the one list both hot paths
 * (SQLite's prepared insert, PostgreSQL's single-statement settle) and the bench's bulk loader write
 * usage rows by, so a column added to the table is added here once.
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
  ];
}

/**
 * The usage row of an answered call settled in full — status `ok`, no error, HTTP 200, usage from the
 * upstream, the client still there, no shortfall — has six columns whose values never change. SQLite's
 * hot path inserts such rows with those six written into the statement: each value bound costs a native
 * call and, for text, a copy into UTF-8 (six of the eighteen, ~2,500 instructions per call; docs/performance.md,
 * twenty-first round). `ANSWERED_USAGE_SQL` is the statement's values list; `answeredUsageValues` gives the
 * rest, in `USAGE_COLUMNS` order (test/store/sqlite-engine.test.ts writes one record both ways and compares
 * the rows, so a column added to the list and not here fails there).
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

/** The values of an answered call's usage row that are not constant, in `USAGE_COLUMNS` order. */
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
  ];
}
