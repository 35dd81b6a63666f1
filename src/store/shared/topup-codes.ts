import { credit, invalidCredit } from '../ledger-rules.js';
import { newId } from '../new-id.js';
import { type CodeBatchesTable, sumOf, toNumber, toNumberOrNull } from '../schema.js';
import type { CodeBatch, NewCodeBatch, RedeemCodeResult, TopUpCodeState, TopUpCodes } from '../types.js';
import type { SqlEngine } from './engine.js';

/** Codes inserted per statement: far below either database's limit of bound values. */
const INSERT_CHUNK = 500;

function toBatch(row: CodeBatchesTable, redeemed: number): CodeBatch {
  return {
    id: row.id,
    amountNano: toNumber(row.amount_nano),
    codes: row.codes,
    note: row.note,
    expiresAt: toNumberOrNull(row.expires_at),
    createdBy: row.created_by,
    createdAt: toNumber(row.created_at),
    redeemed,
  };
}

/**
 * Top-up codes on either database. A redemption is one transaction: the UPDATE that marks the code matches
 * it only while it is unredeemed and its batch unexpired — of concurrent redemptions, on any instance, one
 * changes the row and the others, waiting on its row lock (PostgreSQL) or the write lock (SQLite), find it
 * redeemed — then the credit, by the rule `addCredit` follows, as a ledger row naming the batch.
 */
export class TopUpCodeQueries implements TopUpCodes {
  constructor(private readonly engine: SqlEngine) {}

  async createCodeBatch(input: NewCodeBatch): Promise<CodeBatch> {
    const invalid = invalidCredit(input.amountNano);
    if (invalid) throw invalid;
    if (input.codes.length === 0) throw new Error('a batch needs at least one code');
    const row: CodeBatchesTable = {
      id: newId('cb'),
      amount_nano: input.amountNano,
      codes: input.codes.length,
      note: input.note,
      expires_at: input.expiresAt,
      created_by: input.createdBy,
      created_at: this.engine.now(),
    };
    await this.engine.db.transaction().execute(async (trx) => {
      await trx.insertInto('code_batches').values(row).execute();
      for (let i = 0; i < input.codes.length; i += INSERT_CHUNK) {
        await trx
          .insertInto('topup_codes')
          .values(
            input.codes.slice(i, i + INSERT_CHUNK).map((code, j) => ({
              hash: code.hash,
              batch_id: row.id,
              position: i + j + 1,
              hint: code.hint,
              redeemed_by: null,
              redeemed_at: null,
            })),
          )
          .execute();
      }
    });
    return toBatch(row, 0);
  }

  async listCodeBatches(limit: number): Promise<CodeBatch[]> {
    const rows = await this.batches()
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit)
      .execute();
    return rows.map(({ redeemed, ...row }) => toBatch(row, sumOf(redeemed)));
  }

  async getCodeBatch(id: string): Promise<CodeBatch | undefined> {
    const row = await this.batches().where('id', '=', id).executeTakeFirst();
    if (!row) return undefined;
    const { redeemed, ...batch } = row;
    return toBatch(batch, sumOf(redeemed));
  }

  async listBatchCodes(batchId: string): Promise<TopUpCodeState[]> {
    const rows = await this.engine.db
      .selectFrom('topup_codes')
      .leftJoin('accounts', 'accounts.id', 'topup_codes.redeemed_by')
      .select([
        'topup_codes.position',
        'topup_codes.hint',
        'topup_codes.redeemed_by',
        'topup_codes.redeemed_at',
        'accounts.email',
      ])
      .where('topup_codes.batch_id', '=', batchId)
      .orderBy('topup_codes.position', 'asc')
      .execute();
    return rows.map((r) => ({
      position: r.position,
      hint: r.hint,
      redeemedBy: r.redeemed_by === null ? null : { accountId: r.redeemed_by, email: r.email ?? '' },
      redeemedAt: toNumberOrNull(r.redeemed_at),
    }));
  }

  async redeemCode(input: { codeHash: string; accountId: string }): Promise<RedeemCodeResult> {
    return this.engine.db.transaction().execute(async (trx): Promise<RedeemCodeResult> => {
      const now = this.engine.now();
      const marked = await trx
        .updateTable('topup_codes')
        .set({ redeemed_by: input.accountId, redeemed_at: now })
        .where('hash', '=', input.codeHash)
        .where('redeemed_at', 'is', null)
        .where((eb) =>
          eb.exists(
            eb
              .selectFrom('code_batches')
              .select('code_batches.id')
              .whereRef('code_batches.id', '=', 'topup_codes.batch_id')
              .where((b) =>
                b.or([b('code_batches.expires_at', 'is', null), b('code_batches.expires_at', '>', now)]),
              ),
          ),
        )
        .returning('batch_id')
        .executeTakeFirst();
      if (!marked) return { ok: false };
      const batch = await trx
        .selectFrom('code_batches')
        .select(['amount_nano', 'note'])
        .where('id', '=', marked.batch_id)
        .executeTakeFirstOrThrow();
      const amountNano = toNumber(batch.amount_nano);
      const account = await this.engine
        .lockRows(
          trx.selectFrom('accounts').select('balance_nano').where('id', '=', input.accountId),
          'no key update',
        )
        .executeTakeFirst();
      if (!account) throw new Error(`no account ${input.accountId}`);
      const balanceNano = credit(toNumber(account.balance_nano), amountNano);
      await trx
        .updateTable('accounts')
        .set({ balance_nano: balanceNano })
        .where('id', '=', input.accountId)
        .execute();
      await trx
        .insertInto('ledger')
        .values({
          id: newId('led'),
          account_id: input.accountId,
          kind: 'credit',
          amount_nano: amountNano,
          request_id: null,
          note: batch.note === null ? 'top-up code' : `top-up code: ${batch.note}`,
          created_at: now,
          code_batch_id: marked.batch_id,
        })
        .execute();
      return { ok: true, amountNano, balanceNano, batchId: marked.batch_id };
    });
  }

  /** Every batch with its redeemed count (a count of its codes' index entries). */
  private batches() {
    return this.engine.db
      .selectFrom('code_batches')
      .selectAll('code_batches')
      .select((eb) =>
        eb
          .selectFrom('topup_codes')
          .select((c) => c.fn.countAll<string | number>().as('n'))
          .whereRef('topup_codes.batch_id', '=', 'code_batches.id')
          .where('topup_codes.redeemed_at', 'is not', null)
          .as('redeemed'),
      );
  }
}
