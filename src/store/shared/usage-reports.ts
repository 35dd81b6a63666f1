import type { ExpressionBuilder } from 'kysely';
import type {
  CreditEntry,
  DailyRefusals,
  DailyUsageRow,
  ProviderTraffic,
  UsageCursor,
  UsageFilters,
  UsageReports,
  UsageRow,
} from '../dashboard-types.js';
import { chargedOf } from '../ledger-rules.js';
import { ADMIN_REPORTS } from '../report-limits.js';
import { type Database, sumOf, toNumber } from '../schema.js';
import type { DashboardEngine } from './engine.js';
import { usagePage } from './usage-page.js';

const DAY_MS = 86_400_000;

/**
 * The read models of the usage pages on either database. Every usage query is bounded (a page, or a day
 * range) and served by an index of migration 0003; the reports — the queries that may read many rows — run
 * where the database's `ReportRunner` runs them.
 */
export class UsageReportQueries implements UsageReports {
  constructor(private readonly engine: DashboardEngine) {}

  /** See `usage-page.ts`. */
  usagePage(
    accountId: string,
    filters: UsageFilters,
    options: { limit: number; cursor?: UsageCursor | undefined },
  ): Promise<UsageRow[]> {
    return usagePage(this.engine, accountId, filters, options);
  }

  /**
   * Requests, tokens and charges of an account per UTC day and provider in [from, to). The day is
   * computed in the database as an integer division of the epoch-ms column (the divisor is a literal,
   * so SQLite and PostgreSQL both divide integers and group by the same expression). Refused requests are
   * not in it (`refusalsDaily`).
   */
  async usageDaily(
    accountId: string,
    range: { from: number; to: number },
    keyId?: string,
  ): Promise<DailyUsageRow[]> {
    const day = (eb: ExpressionBuilder<Database, 'usage'>) => eb('created_at', '/', eb.lit(DAY_MS));
    const rows = await this.engine.reports.run(accountId, (check) => {
      let query = this.engine.db
        .selectFrom('usage')
        .select((eb) => [
          day(eb).as('day'),
          'provider',
          eb.fn.countAll<string | number>().as('requests'),
          eb.fn.sum<string | number | null>('prompt_tokens').as('prompt_tokens'),
          eb.fn.sum<string | number | null>('completion_tokens').as('completion_tokens'),
          eb.fn.sum<string | number | null>('input_cost_nano').as('input'),
          eb.fn.sum<string | number | null>('output_cost_nano').as('output'),
          eb.fn.sum<string | number | null>('shortfall_nano').as('shortfall'),
        ])
        .where('account_id', '=', accountId)
        .where('created_at', '>=', range.from)
        .where('created_at', '<', range.to);
      if (keyId !== undefined) query = query.where('key_id', '=', keyId);
      return check(query, 'usage').groupBy((eb) => [day(eb), 'provider']);
    });
    return rows
      .map((r) => ({
        day: Math.floor(Number(r.day)),
        provider: r.provider,
        requests: sumOf(r.requests),
        promptTokens: sumOf(r.prompt_tokens),
        completionTokens: sumOf(r.completion_tokens),
        costNano: chargedOf(sumOf(r.input), sumOf(r.output), sumOf(r.shortfall)),
      }))
      .sort((a, b) => a.day - b.day || String(a.provider).localeCompare(String(b.provider)));
  }

  /** Requests of an account refused before any hold (402), per UTC day in [from, to). */
  async refusalsDaily(
    accountId: string,
    range: { from: number; to: number },
    keyId?: string,
  ): Promise<DailyRefusals[]> {
    const day = (eb: ExpressionBuilder<Database, 'refusals'>) => eb('minute_start', '/', eb.lit(DAY_MS));
    const rows = await this.engine.reports.run(accountId, () => {
      let query = this.engine.db
        .selectFrom('refusals')
        .select((eb) => [day(eb).as('day'), eb.fn.sum<string | number | null>('requests').as('requests')])
        .where('account_id', '=', accountId)
        .where('minute_start', '>=', range.from)
        .where('minute_start', '<', range.to);
      if (keyId !== undefined) query = query.where('key_id', '=', keyId);
      return query.groupBy((eb) => day(eb));
    });
    return rows
      .map((r) => ({ day: Math.floor(Number(r.day)), requests: sumOf(r.requests) }))
      .sort((a, b) => a.day - b.day);
  }

  /**
   * Requests and failed requests per provider since a time, over every account. Refused requests reached
   * no provider and are not among them.
   */
  async providerTraffic(since: number): Promise<ProviderTraffic[]> {
    const rows = await this.engine.reports.run(ADMIN_REPORTS, (check) =>
      check(
        this.engine.db
          .selectFrom('usage')
          .select((eb) => ['provider', 'status', eb.fn.countAll<string | number>().as('n')])
          .where('created_at', '>=', since)
          .where('provider', 'is not', null),
        'usage',
      ).groupBy(['provider', 'status']),
    );
    const out = new Map<string, ProviderTraffic>();
    for (const r of rows) {
      if (r.provider === null) continue;
      const entry = out.get(r.provider) ?? { provider: r.provider, requests: 0, errors: 0 };
      entry.requests += sumOf(r.n);
      if (r.status !== 'ok') entry.errors += sumOf(r.n);
      out.set(r.provider, entry);
    }
    return [...out.values()];
  }

  /** The latest credits granted to an account (ledger rows of kind credit), newest first. */
  async recentCredits(accountId: string, limit: number): Promise<CreditEntry[]> {
    const rows = await this.engine.db
      .selectFrom('ledger')
      .select(['id', 'amount_nano', 'note', 'created_at', 'code_batch_id'])
      .where('account_id', '=', accountId)
      .where('kind', '=', 'credit')
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit)
      .execute();
    return rows.map((r) => ({
      id: r.id,
      amountNano: toNumber(r.amount_nano),
      note: r.note,
      createdAt: toNumber(r.created_at),
      batchId: r.code_batch_id ?? null,
    }));
  }
}
