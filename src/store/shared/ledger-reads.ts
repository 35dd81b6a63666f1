import { sumOf } from '../schema.js';
import type { LedgerCheckOptions, LedgerReads, LedgerReport, UsageRecord } from '../types.js';
import { toUsage } from '../usage-row.js';
import type { SqlEngine } from './engine.js';
import { chargesSinceByAccount, ledgerCheck } from './ledger-check.js';

/** What the ledger holds, read back, on either database. */
export class LedgerReadQueries implements LedgerReads {
  constructor(private readonly engine: SqlEngine) {}

  async openHoldsNano(accountId: string): Promise<number> {
    const row = await this.engine.db
      .selectFrom('holds')
      .select((eb) => eb.fn.sum<string | number | null>('amount_nano').as('total'))
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return sumOf(row?.total);
  }

  async openHoldsTotal(): Promise<{ count: number; amountNano: number }> {
    const row = await this.engine.db
      .selectFrom('holds')
      .select((eb) => [
        eb.fn.countAll<string | number>().as('count'),
        eb.fn.sum<string | number | null>('amount_nano').as('total'),
      ])
      .executeTakeFirst();
    return { count: sumOf(row?.count), amountNano: sumOf(row?.total) };
  }

  ledgerCheck(options?: LedgerCheckOptions): Promise<LedgerReport> {
    return ledgerCheck(this.engine, options);
  }

  async chargesSince(accountId: string, since: readonly number[]): Promise<number[]> {
    if (since.length === 0) return [];
    return (
      (await chargesSinceByAccount(this.engine.db, since, accountId)).get(accountId) ?? since.map(() => 0)
    );
  }

  async listUsage(accountId: string, options: { limit: number; before?: number }): Promise<UsageRecord[]> {
    let query = this.engine.db.selectFrom('usage').selectAll().where('account_id', '=', accountId);
    if (options.before !== undefined) query = query.where('created_at', '<', options.before);
    const rows = await query
      .orderBy('created_at', 'desc')
      .orderBy('request_id', 'desc')
      .limit(options.limit)
      .execute();
    return rows.map(toUsage);
  }
}
