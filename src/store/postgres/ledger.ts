import type { Kysely, Transaction } from 'kysely';
import { chargeCap, keySettle } from '../key-window-rules.js';
import { credit, invalidCost, invalidCredit, invalidHold, release, settle } from '../ledger-rules.js';
import { newId } from '../new-id.js';
import { REFUSAL_BATCH, type RefusalCount, RefusalCounter } from '../refusal-counts.js';
import { refusedHold } from '../refused-hold.js';
import { type Database, toNumber, toNumberOrNull } from '../schema.js';
import { holdsToRelease } from '../shared/holds-to-release.js';
import { addSpend, SPEND_COLUMNS, type SpendCounters, spendColumns, spendCountersOf } from '../spend.js';
import type {
  HoldsToRelease,
  Ledger,
  PlaceHoldInput,
  PlaceHoldResult,
  RefusalRecord,
  ReleaseInput,
  SettleInput,
  SettleResult,
  UsageRecord,
} from '../types.js';
import { usageRowOf, usageValues } from '../usage-row.js';
import { PostgresGroupWrites } from './group-writes.js';
import { giveBackToKey, lockKeyWindow, placeKeyedHold, writeKeyWindow } from './key-limit.js';

const PLACED: PlaceHoldResult = Object.freeze({ ok: true });

/**
 * The PostgreSQL store's ledger. Holds, and settles whose hold covers their cost, run as the single
 * statements of `ledger-sql.ts` (grouped by account, `group-writes.ts`). Everything else — a settle with
 * a shortfall, one whose hold is gone, one with an Idempotency-Key, releases, credits, the sweeper's
 * releases — runs as a transaction that locks the account's row, applies the rule of `ledger-rules.ts` and
 * writes the result, so other instances writing the same account wait for it.
 */
export class PostgresLedger implements Ledger {
  private readonly writes: PostgresGroupWrites;
  private readonly refusals = new RefusalCounter((counts) => this.upsertRefusals(counts));

  constructor(
    private readonly db: Kysely<Database>,
    private readonly now: () => number,
  ) {
    this.writes = new PostgresGroupWrites(db);
  }

  async placeHold(input: PlaceHoldInput): Promise<PlaceHoldResult> {
    const invalid = invalidHold(input.amountNano);
    if (invalid) throw invalid;
    if (await this.writes.placeHold(input)) return PLACED;
    // Nothing was written: a key with a spend limit is held by the transaction that locks its row.
    if (input.keyId !== undefined && (await this.keyHasLimit(input.keyId))) {
      return this.db.transaction().execute((trx) => placeKeyedHold(trx, input));
    }
    // Otherwise say why, from the row as it is now.
    const row = await this.db
      .selectFrom('accounts')
      .select(['balance_nano', 'status'])
      .where('id', '=', input.accountId)
      .executeTakeFirst();
    return refusedHold(row && { balanceNano: toNumber(row.balance_nano), status: row.status });
  }

  async settle(input: SettleInput): Promise<SettleResult> {
    const invalid = invalidCost(input.costNano);
    if (invalid) throw invalid;
    const covered = await this.writes.settle(input);
    if (covered) return { balanceNano: covered.balanceNano, chargedNano: input.costNano, shortfallNano: 0 };
    return this.db.transaction().execute(async (trx) => {
      const closed = await closeHold(trx, input.holdId, input.accountId);
      const held = closed?.amountNano ?? 0;
      // The key's row before the account's, as every transaction taking both locks them.
      const keyId = closed?.keyId ?? input.keyId ?? null;
      const keyWindow = closed ? closed.keyWindow : (input.keyWindow ?? null);
      const key = keyId !== null && keyWindow !== null ? await lockKeyWindow(trx, keyId) : undefined;
      const account = await lockAccountWithSpend(trx, input.accountId);
      // A key's limit bounds what the settle may charge beyond the hold; the rest is a shortfall.
      const cost =
        key && keyWindow !== null
          ? Math.min(input.costNano, chargeCap(key, keyWindow, held))
          : input.costNano;
      const settled = settle(account.balanceNano, held, cost);
      settled.shortfall = input.costNano - settled.charged;
      if (key && keyId !== null && keyWindow !== null) {
        await writeKeyWindow(trx, keyId, keySettle(key, keyWindow, held, settled.charged));
      }
      addSpend(account, settled.charged, input.usage.createdAt);
      await trx
        .updateTable('accounts')
        .set({ balance_nano: settled.next, ...spendColumns(account) })
        .where('id', '=', input.accountId)
        .execute();
      // The usage row is the charge's record (migration 0007).
      await trx
        .insertInto('usage')
        .values(usageRowOf(usageValues(input.usage, settled.shortfall, settled.charged)))
        .execute();
      const result = {
        balanceNano: settled.next,
        chargedNano: settled.charged,
        shortfallNano: settled.shortfall,
      };
      if (input.idempotency) {
        await trx
          .updateTable('idempotency')
          .set({ state: 'done', response_json: input.idempotency.render(result) })
          .where('account_id', '=', input.accountId)
          .where('idem_key', '=', input.idempotency.key)
          .where('request_id', '=', input.usage.requestId)
          .execute();
      }
      return result;
    });
  }

  release(input: ReleaseInput): Promise<{ balanceNano: number }> {
    return this.db.transaction().execute(async (trx) => {
      const closed = await closeHold(trx, input.holdId, input.accountId);
      const held = closed?.amountNano ?? 0;
      if (closed) await giveBackToKey(trx, closed.keyId, closed.keyWindow, held);
      const balanceNano = await giveBack(trx, input.accountId, held);
      if (input.usage)
        await trx
          .insertInto('usage')
          .values(usageRowOf(usageValues(input.usage, 0, 0)))
          .execute();
      return { balanceNano };
    });
  }

  async addCredit(input: {
    accountId: string;
    amountNano: number;
    note: string | null;
  }): Promise<{ balanceNano: number }> {
    const invalid = invalidCredit(input.amountNano);
    if (invalid) throw invalid;
    return this.db.transaction().execute(async (trx) => {
      const balanceNano = credit(await lockBalance(trx, input.accountId), input.amountNano);
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
          amount_nano: input.amountNano,
          request_id: null,
          note: input.note,
          created_at: this.now(),
        })
        .execute();
      return { balanceNano };
    });
  }

  async releaseHolds(filter: HoldsToRelease): Promise<number> {
    const open = await holdsToRelease(this.db, filter);
    // One short transaction per hold (hold row, then account row, the order settle uses too): sweepers of
    // several instances and the settles they race never wait on each other in a cycle.
    let released = 0;
    for (const hold of open) {
      const closed = await this.db.transaction().execute(async (trx) => {
        const closed = await closeHold(trx, hold.id, hold.accountId);
        if (closed === undefined) return false;
        await giveBackToKey(trx, closed.keyId, closed.keyWindow, closed.amountNano);
        if (closed.amountNano > 0) await giveBack(trx, hold.accountId, closed.amountNano);
        return true;
      });
      if (closed) released += 1;
    }
    return released;
  }

  async recordUsage(usage: UsageRecord): Promise<void> {
    await this.db
      .insertInto('usage')
      .values(usageRowOf(usageValues(usage, 0, 0)))
      .execute();
  }

  recordRefusal(refusal: RefusalRecord): Promise<void> {
    return this.refusals.add(refusal);
  }

  private async keyHasLimit(keyId: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('api_keys')
      .select('id')
      .where('id', '=', keyId)
      .where('limit_nano', 'is not', null)
      .executeTakeFirst();
    return row !== undefined;
  }

  /** Writes the refusals still counted (before the pool is closed). */
  close(): Promise<void> {
    return this.refusals.drain();
  }

  /** One batch of refusal counts, each added to its row (created at its first refusal). */
  private async upsertRefusals(counts: RefusalCount[]): Promise<void> {
    for (let i = 0; i < counts.length; i += REFUSAL_BATCH) {
      await this.db
        .insertInto('refusals')
        .values(
          counts.slice(i, i + REFUSAL_BATCH).map((c) => ({
            account_id: c.accountId,
            minute_start: c.minuteStart,
            key_id: c.keyId,
            error_code: c.errorCode,
            http_status: c.httpStatus,
            requests: c.requests,
          })),
        )
        .onConflict((oc) =>
          oc
            .columns(['account_id', 'minute_start', 'key_id', 'error_code'])
            .doUpdateSet((eb) => ({ requests: eb('refusals.requests', '+', eb.ref('excluded.requests')) })),
        )
        .execute();
    }
  }
}

/**
 * Closes an open hold — deletes its row — and returns its amount and key window; undefined when it was
 * already closed (e.g. released by the expiry sweeper, or by another instance's), so its money is never
 * returned twice.
 */
async function closeHold(
  trx: Transaction<Database>,
  holdId: string,
  accountId: string,
): Promise<{ amountNano: number; keyId: string | null; keyWindow: number | null } | undefined> {
  const hold = await trx
    .selectFrom('holds')
    .select(['amount_nano', 'key_id', 'key_window'])
    .where('id', '=', holdId)
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  if (!hold) return undefined;
  // The delete is the check under the row lock: of two closers racing, one deletes the row.
  const closed = await trx.deleteFrom('holds').where('id', '=', holdId).executeTakeFirst();
  if (Number(closed.numDeletedRows) !== 1) return undefined;
  return {
    amountNano: toNumber(hold.amount_nano),
    keyId: hold.key_id ?? null,
    keyWindow: toNumberOrNull(hold.key_window ?? null),
  };
}

/** Returns `held` to the account's balance under its row lock; the balance after. */
async function giveBack(trx: Transaction<Database>, accountId: string, held: number): Promise<number> {
  const balanceNano = release(await lockBalance(trx, accountId), held);
  if (held > 0) {
    await trx
      .updateTable('accounts')
      .set({ balance_nano: balanceNano })
      .where('id', '=', accountId)
      .execute();
  }
  return balanceNano;
}

/**
 * Reads an account's balance and locks its row until the transaction ends (FOR NO KEY UPDATE: the lock an
 * UPDATE of the balance takes, which lets other transactions insert rows that reference the account
 * meanwhile). Only the balance: credits, releases and keys also run on a database before migration 0008
 * (the store's tests of older databases set them up so). Throws for no such account.
 */
async function lockBalance(trx: Transaction<Database>, accountId: string): Promise<number> {
  const row = await trx
    .selectFrom('accounts')
    .select('balance_nano')
    .where('id', '=', accountId)
    .forNoKeyUpdate()
    .executeTakeFirst();
  if (row === undefined) throw new Error(`no account ${accountId}`);
  return toNumber(row.balance_nano);
}

/** {@link lockBalance}, with the account's spend counters (for a settle, which adds to them). */
async function lockAccountWithSpend(
  trx: Transaction<Database>,
  accountId: string,
): Promise<SpendCounters & { balanceNano: number }> {
  const row = await trx
    .selectFrom('accounts')
    .select(['balance_nano', ...SPEND_COLUMNS])
    .where('id', '=', accountId)
    .forNoKeyUpdate()
    .executeTakeFirst();
  if (row === undefined) throw new Error(`no account ${accountId}`);
  return { balanceNano: toNumber(row.balance_nano), ...spendCountersOf(row) };
}
