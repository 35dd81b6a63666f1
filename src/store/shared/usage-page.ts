import type { UsageCursor, UsageFilters, UsageRow } from '../dashboard-types.js';
import { chargedOf } from '../ledger-rules.js';
import { toNumber } from '../schema.js';
import type { DashboardEngine } from './engine.js';

/**
 * One page of an account's requests, newest first, after `cursor`: its usage rows, and its refusal
 * counts (a row per key, error code and minute; none under a provider filter or status ok, as refused
 * requests reached no provider). The two are read apart, each up to a page, and merged: newest first,
 * and at one time the usage rows before the counts. A cursor names the last row shown of either kind,
 * and each query goes on from it by its own order, compared by its own database (no string of one
 * database's collation is compared here).
 */
export async function usagePage(
  engine: DashboardEngine,
  accountId: string,
  filters: UsageFilters,
  options: { limit: number; cursor?: UsageCursor | undefined },
): Promise<UsageRow[]> {
  const cursor = options.cursor;
  const afterCount = cursor ? refusalOf(cursor.requestId) : undefined;
  const usage = await engine.reports.run(accountId, (check) => {
    let query = engine.db
      .selectFrom('usage')
      .leftJoin('api_keys', 'api_keys.id', 'usage.key_id')
      .select([
        'usage.request_id as request_id',
        'usage.created_at as created_at',
        'usage.key_id as key_id',
        'api_keys.name as key_name',
        'api_keys.hint as key_hint',
        'usage.provider as provider',
        'usage.model as model',
        'usage.prompt_tokens as prompt_tokens',
        'usage.cache_read_tokens as cache_read_tokens',
        'usage.cache_write_tokens as cache_write_tokens',
        'usage.completion_tokens as completion_tokens',
        'usage.usage_estimated as usage_estimated',
        'usage.input_cost_nano as input_cost_nano',
        'usage.output_cost_nano as output_cost_nano',
        'usage.shortfall_nano as shortfall_nano',
        'usage.status as status',
        'usage.error_code as error_code',
        'usage.http_status as http_status',
        'usage.duration_ms as duration_ms',
        'usage.client_gone as client_gone',
      ])
      .where('usage.account_id', '=', accountId);
    if (filters.keyId !== undefined) query = query.where('usage.key_id', '=', filters.keyId);
    if (filters.provider !== undefined) query = query.where('usage.provider', '=', filters.provider);
    if (filters.status !== undefined) query = query.where('usage.status', '=', filters.status);
    if (filters.from !== undefined) query = query.where('usage.created_at', '>=', filters.from);
    if (filters.to !== undefined) query = query.where('usage.created_at', '<', filters.to);
    if (cursor && afterCount) {
      // After a count: every usage row of its time came before it.
      query = query.where('usage.created_at', '<', cursor.createdAt);
    } else if (cursor) {
      // The plain bound lets the index seek straight to the cursor; the OR breaks ties within one ms.
      query = query
        .where('usage.created_at', '<=', cursor.createdAt)
        .where((eb) =>
          eb.or([
            eb('usage.created_at', '<', cursor.createdAt),
            eb('usage.request_id', '<', cursor.requestId),
          ]),
        );
    }
    // A filter no index serves (status) reads the account's rows until the page fills.
    return check(query, 'usage')
      .orderBy('usage.created_at', 'desc')
      .orderBy('usage.request_id', 'desc')
      .limit(options.limit);
  });
  const rows: UsageRow[] = usage.map((r) => ({
    requestId: r.request_id,
    createdAt: toNumber(r.created_at),
    keyId: r.key_id,
    keyName: r.key_name,
    keyHint: r.key_hint,
    provider: r.provider,
    model: r.model,
    promptTokens: toNumber(r.prompt_tokens),
    cacheReadTokens: toNumber(r.cache_read_tokens),
    cacheWriteTokens: toNumber(r.cache_write_tokens),
    completionTokens: toNumber(r.completion_tokens),
    usageEstimated: r.usage_estimated === 1,
    costNano: chargedOf(
      toNumber(r.input_cost_nano),
      toNumber(r.output_cost_nano),
      toNumber(r.shortfall_nano),
    ),
    status: r.status === 'ok' ? 'ok' : 'error',
    errorCode: r.error_code,
    httpStatus: r.http_status,
    durationMs: toNumber(r.duration_ms),
    clientGone: r.client_gone === 1,
    requests: 1,
  }));
  if (filters.provider !== undefined || filters.status === 'ok') return rows;

  // The counts are a few rows per minute of refusals, read through their primary key: no time check.
  const counts = await engine.reports.run(accountId, () => {
    let query = engine.db
      .selectFrom('refusals')
      .leftJoin('api_keys', 'api_keys.id', 'refusals.key_id')
      .select([
        'refusals.minute_start as minute_start',
        'refusals.key_id as key_id',
        'api_keys.name as key_name',
        'api_keys.hint as key_hint',
        'refusals.error_code as error_code',
        'refusals.http_status as http_status',
        'refusals.requests as requests',
      ])
      .where('refusals.account_id', '=', accountId);
    if (filters.keyId !== undefined) query = query.where('refusals.key_id', '=', filters.keyId);
    if (filters.from !== undefined) query = query.where('refusals.minute_start', '>=', filters.from);
    if (filters.to !== undefined) query = query.where('refusals.minute_start', '<', filters.to);
    if (cursor && afterCount) {
      const { keyId, errorCode } = afterCount;
      query = query
        .where('refusals.minute_start', '<=', cursor.createdAt)
        .where((eb) =>
          eb.or([
            eb('refusals.minute_start', '<', cursor.createdAt),
            eb('refusals.key_id', '<', keyId),
            eb.and([eb('refusals.key_id', '=', keyId), eb('refusals.error_code', '<', errorCode)]),
          ]),
        );
    } else if (cursor) {
      // After a usage row: the counts of its time come after it.
      query = query.where('refusals.minute_start', '<=', cursor.createdAt);
    }
    return query
      .orderBy('refusals.minute_start', 'desc')
      .orderBy('refusals.key_id', 'desc')
      .orderBy('refusals.error_code', 'desc')
      .limit(options.limit);
  });
  if (counts.length === 0) return rows;
  const refused: UsageRow[] = counts.map((c) => {
    const minuteStart = toNumber(c.minute_start);
    return {
      requestId: `${REFUSAL_ID_PREFIX}${minuteStart}-${c.key_id}-${c.error_code}`,
      createdAt: minuteStart,
      keyId: c.key_id,
      keyName: c.key_name,
      keyHint: c.key_hint,
      provider: null,
      model: null,
      promptTokens: 0,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      completionTokens: 0,
      usageEstimated: false,
      costNano: 0,
      status: 'error',
      errorCode: c.error_code,
      httpStatus: c.http_status,
      durationMs: 0,
      clientGone: false,
      requests: toNumber(c.requests),
    };
  });
  return newestFirst(rows, refused, options.limit);
}

/** The `requestId` of a refusal count's row: `refused-<minute start>-<key id>-<error code>`. */
const REFUSAL_ID_PREFIX = 'refused-';

/** The key and code a refusal count's `requestId` names; undefined for a request's id. */
function refusalOf(requestId: string): { keyId: string; errorCode: string } | undefined {
  const m = /^refused-\d+-([A-Za-z0-9_]+)-([A-Za-z0-9_]+)$/.exec(requestId);
  return m ? { keyId: m[1] as string, errorCode: m[2] as string } : undefined;
}

/**
 * Two pages in the usage list's order merged into one of at most `limit` rows: newest first, and at one
 * time the usage rows before the refusal counts. Within each kind the order is the one its query had.
 */
function newestFirst(usage: UsageRow[], counts: UsageRow[], limit: number): UsageRow[] {
  const out: UsageRow[] = [];
  let u = 0;
  let c = 0;
  while (out.length < limit && (u < usage.length || c < counts.length)) {
    const a = usage[u];
    const b = counts[c];
    if (a && (!b || a.createdAt >= b.createdAt)) {
      out.push(a);
      u++;
    } else if (b) {
      out.push(b);
      c++;
    }
  }
  return out;
}
