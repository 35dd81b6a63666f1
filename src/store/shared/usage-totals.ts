import type { ExpressionBuilder } from 'kysely';
import type { RefusalTotalsRow, UsageTotalsQuery, UsageTotalsRow } from '../dashboard-types.js';
import { chargedOf } from '../ledger-rules.js';
import { ADMIN_REPORTS } from '../report-limits.js';
import { type Database, sumOf } from '../schema.js';
import type { DashboardEngine } from './engine.js';

/**
 * Requests, tokens and charges in [from, to), grouped by time bucket (`bucketMs` wide, counted from the
 * epoch), account, key, provider, model and status: one account's (`accountId`) or every account's. The
 * bucket is an integer division of the epoch-ms column by a literal, so SQLite and PostgreSQL group by the
 * same expression. The callers roll the rows up into whatever breakdown a page shows; a total of them is
 * the sum of the usage rows it covers, each charged `input + output − shortfall`.
 */
export async function usageTotals(engine: DashboardEngine, q: UsageTotalsQuery): Promise<UsageTotalsRow[]> {
  const bucket = (eb: ExpressionBuilder<Database, 'usage'>) => eb('created_at', '/', eb.lit(q.bucketMs));
  const rows = await engine.reports.run(q.accountId ?? ADMIN_REPORTS, (check) => {
    let query = engine.db
      .selectFrom('usage')
      .select((eb) => [
        bucket(eb).as('bucket'),
        'account_id',
        'key_id',
        'provider',
        'model',
        'status',
        eb.fn.countAll<string | number>().as('requests'),
        eb.fn.sum<string | number | null>('prompt_tokens').as('prompt_tokens'),
        eb.fn.sum<string | number | null>('completion_tokens').as('completion_tokens'),
        eb.fn.sum<string | number | null>('input_cost_nano').as('input'),
        eb.fn.sum<string | number | null>('output_cost_nano').as('output'),
        eb.fn.sum<string | number | null>('shortfall_nano').as('shortfall'),
      ])
      .where('created_at', '>=', q.from)
      .where('created_at', '<', q.to);
    if (q.accountId !== undefined) query = query.where('account_id', '=', q.accountId);
    if (q.keyId !== undefined) query = query.where('key_id', '=', q.keyId);
    if (q.provider !== undefined) query = query.where('provider', '=', q.provider);
    if (q.model !== undefined) query = query.where('model', '=', q.model);
    return check(query, 'usage').groupBy((eb) => [
      bucket(eb),
      'account_id',
      'key_id',
      'provider',
      'model',
      'status',
    ]);
  });
  return rows.map((r) => ({
    bucket: Math.floor(Number(r.bucket)) * q.bucketMs,
    accountId: r.account_id,
    keyId: r.key_id,
    provider: r.provider,
    model: r.model,
    status: r.status === 'ok' ? 'ok' : 'error',
    requests: sumOf(r.requests),
    promptTokens: sumOf(r.prompt_tokens),
    completionTokens: sumOf(r.completion_tokens),
    costNano: chargedOf(sumOf(r.input), sumOf(r.output), sumOf(r.shortfall)),
  }));
}

/**
 * Requests refused before any hold (402) in [from, to), by bucket, account, key and reason; none under a
 * provider or model filter, as they reached no provider.
 */
export async function refusalTotals(
  engine: DashboardEngine,
  q: UsageTotalsQuery,
): Promise<RefusalTotalsRow[]> {
  if (q.provider !== undefined || q.model !== undefined) return [];
  const bucket = (eb: ExpressionBuilder<Database, 'refusals'>) => eb('minute_start', '/', eb.lit(q.bucketMs));
  const rows = await engine.reports.run(q.accountId ?? ADMIN_REPORTS, () => {
    let query = engine.db
      .selectFrom('refusals')
      .select((eb) => [
        bucket(eb).as('bucket'),
        'account_id',
        'key_id',
        'error_code',
        eb.fn.sum<string | number | null>('requests').as('requests'),
      ])
      .where('minute_start', '>=', q.from)
      .where('minute_start', '<', q.to);
    if (q.accountId !== undefined) query = query.where('account_id', '=', q.accountId);
    if (q.keyId !== undefined) query = query.where('key_id', '=', q.keyId);
    return query.groupBy((eb) => [bucket(eb), 'account_id', 'key_id', 'error_code']);
  });
  return rows.map((r) => ({
    bucket: Math.floor(Number(r.bucket)) * q.bucketMs,
    accountId: r.account_id,
    keyId: r.key_id,
    reason: r.error_code,
    requests: sumOf(r.requests),
  }));
}
