import { type IdempotencyTable, toNumber } from '../schema.js';
import type { BeginIdempotentInput, BeginIdempotentResult, IdempotencyRecords } from '../types.js';
import type { SqlEngine } from './engine.js';

/**
 * The records of Idempotency-Key requests on either database. A request's stored answer is written by its
 * settle, in the ledger's transaction (so a charged request can always be replayed).
 */
export class IdempotencyQueries implements IdempotencyRecords {
  constructor(private readonly engine: SqlEngine) {}

  async beginIdempotent(input: BeginIdempotentInput): Promise<BeginIdempotentResult> {
    return this.engine.db.transaction().execute(async (trx) => {
      const claim = {
        body_hash: input.bodyHash,
        state: 'in_progress',
        request_id: input.requestId,
        response_json: null,
        locked_until: input.lockedUntil,
        created_at: input.now,
        expires_at: input.expiresAt,
      };
      // Insert-or-nothing, then read the row locked: of two requests racing with one key on two
      // instances, exactly one claims it. (The row may vanish in between, freed by a failed attempt:
      // then claim it again.)
      let row: IdempotencyTable | undefined;
      for (let attempt = 0; row === undefined; attempt++) {
        if (attempt === 3) throw new Error('idempotency key kept changing while being claimed');
        const inserted = await trx
          .insertInto('idempotency')
          .values({ account_id: input.accountId, idem_key: input.key, ...claim })
          .onConflict((oc) => oc.columns(['account_id', 'idem_key']).doNothing())
          .executeTakeFirst();
        if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 1) return { kind: 'started' as const };
        const existing = trx
          .selectFrom('idempotency')
          .selectAll()
          .where('account_id', '=', input.accountId)
          .where('idem_key', '=', input.key);
        row = await this.engine.lockRows(existing, 'update').executeTakeFirst();
      }
      const expired = toNumber(row.expires_at) <= input.now;
      const abandoned = row.state === 'in_progress' && toNumber(row.locked_until) <= input.now;
      if (!expired) {
        if (row.body_hash !== input.bodyHash) return { kind: 'mismatch' as const };
        if (row.state === 'done' && row.response_json !== null) {
          return { kind: 'replay' as const, responseJson: row.response_json };
        }
        if (!abandoned) return { kind: 'in_progress' as const };
      }
      await trx
        .updateTable('idempotency')
        .set(claim)
        .where('account_id', '=', input.accountId)
        .where('idem_key', '=', input.key)
        .execute();
      return { kind: 'started' as const };
    });
  }

  async abandonIdempotent(accountId: string, key: string, requestId: string): Promise<void> {
    await this.engine.db
      .deleteFrom('idempotency')
      .where('account_id', '=', accountId)
      .where('idem_key', '=', key)
      .where('request_id', '=', requestId)
      .where('state', '=', 'in_progress')
      .execute();
  }

  async purgeIdempotency(now: number): Promise<number> {
    const result = await this.engine.db
      .deleteFrom('idempotency')
      .where('expires_at', '<=', now)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
