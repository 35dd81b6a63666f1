import type { KeyReports, KeyWithSpend } from '../dashboard-types.js';
import { chargedOf } from '../ledger-rules.js';
import { sumOf, toNumber, toNumberOrNull } from '../schema.js';
import type { DashboardEngine } from './engine.js';

/** An account's keys as the dashboard shows them, on either database. */
export class KeyReportQueries implements KeyReports {
  constructor(private readonly engine: DashboardEngine) {}

  /** Every key of an account (revoked ones too), oldest first, with what each has been charged. */
  async listKeysWithSpend(accountId: string): Promise<KeyWithSpend[]> {
    const keys = await this.engine.db
      .selectFrom('api_keys')
      .select(['id', 'name', 'hint', 'created_at', 'last_used_at', 'revoked_at'])
      .where('account_id', '=', accountId)
      .orderBy('created_at', 'asc')
      .orderBy('id', 'asc')
      .execute();
    const spend = await this.engine.reports.run(accountId, (check) =>
      check(
        this.engine.db
          .selectFrom('usage')
          .select((eb) => [
            'key_id',
            eb.fn.countAll<string | number>().as('requests'),
            eb.fn.sum<string | number | null>('input_cost_nano').as('input'),
            eb.fn.sum<string | number | null>('output_cost_nano').as('output'),
            eb.fn.sum<string | number | null>('shortfall_nano').as('shortfall'),
          ])
          .where('account_id', '=', accountId),
        'usage',
      ).groupBy('key_id'),
    );
    // The refusal counts are a few rows per minute of refusals: no time check needed.
    const refused = await this.engine.reports.run(accountId, () =>
      this.engine.db
        .selectFrom('refusals')
        .select((eb) => ['key_id', eb.fn.sum<string | number | null>('requests').as('requests')])
        .where('account_id', '=', accountId)
        .groupBy('key_id'),
    );
    const byKey = new Map(spend.map((s) => [s.key_id, s]));
    const refusedOf = new Map(refused.map((r) => [r.key_id, sumOf(r.requests)]));
    return keys.map((k) => {
      const s = byKey.get(k.id);
      return {
        id: k.id,
        name: k.name,
        hint: k.hint,
        createdAt: toNumber(k.created_at),
        lastUsedAt: toNumberOrNull(k.last_used_at),
        revokedAt: toNumberOrNull(k.revoked_at),
        spendNano: s ? chargedOf(sumOf(s.input), sumOf(s.output), sumOf(s.shortfall)) : 0,
        requests: (s ? sumOf(s.requests) : 0) + (refusedOf.get(k.id) ?? 0),
        refused: refusedOf.get(k.id) ?? 0,
      };
    });
  }

  /** The stored hash of one key of an account (to drop it from the key cache after a revoke). */
  async keyHash(accountId: string, keyId: string): Promise<string | undefined> {
    const row = await this.engine.db
      .selectFrom('api_keys')
      .select('key_hash')
      .where('id', '=', keyId)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return row?.key_hash;
  }
}
