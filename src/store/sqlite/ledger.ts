import type SQLite from 'better-sqlite3';
import type { Kysely } from 'kysely';
import { credit, hold, invalidCost, invalidCredit, invalidHold, release, settle } from '../ledger-rules.js';
import { newId } from '../new-id.js';
import { type RefusalCount, RefusalCounter } from '../refusal-counts.js';
import { refusedHold } from '../refused-hold.js';
import type { Database } from '../schema.js';
import { holdsToRelease, type OpenHold } from '../shared/holds-to-release.js';
import { addSpend } from '../spend.js';
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
import { answeredUsageValues, isPlainAnswer, usageValues } from '../usage-row.js';
import { GroupAccounts } from './account-rows.js';
import { GroupCommit } from './group-commit.js';
import { LedgerStatements } from './statements.js';

const PLACED: PlaceHoldResult = Object.freeze({ ok: true });

/**
 * The SQLite store's ledger: every money operation of the embedded store. Each runs as a function of the
 * group commit (`group-commit.ts`) on prepared statements (`statements.ts`): it reads its account's row,
 * applies the rule of `ledger-rules.ts`, and writes the result with the hold, usage or ledger row that goes
 * with it, all in the group's transaction. No SQL is built per call and no promise is made per statement.
 */
export class SqliteLedger implements Ledger {
  private readonly stmt: LedgerStatements;
  private readonly accounts: GroupAccounts;
  private readonly group: GroupCommit;
  private readonly refusals = new RefusalCounter((counts) => this.countRefusals(counts));

  constructor(
    db: SQLite.Database,
    /** The query builder on the same connection, for the cold reads (which holds to release). */
    private readonly kysely: Kysely<Database>,
    private readonly now: () => number,
  ) {
    this.stmt = new LedgerStatements(db);
    this.accounts = new GroupAccounts(this.stmt);
    this.group = new GroupCommit(db, this.accounts);
  }

  // placeHold, settle and release hand the group commit's promise straight back: an async function
  // returning it would add a promise and three microtask turns to every call.
  placeHold(input: PlaceHoldInput): Promise<PlaceHoldResult> {
    const invalid = invalidHold(input.amountNano);
    if (invalid) return Promise.reject(invalid);
    return this.group.enqueue(input.accountId, () => this.placeInTx(input));
  }

  settle(input: SettleInput): Promise<SettleResult> {
    const invalid = invalidCost(input.costNano);
    if (invalid) return Promise.reject(invalid);
    return this.group.enqueue(input.accountId, () => this.settleInTx(input));
  }

  release(input: ReleaseInput): Promise<{ balanceNano: number }> {
    return this.group.enqueue(input.accountId, () => this.releaseInTx(input));
  }

  addCredit(input: {
    accountId: string;
    amountNano: number;
    note: string | null;
  }): Promise<{ balanceNano: number }> {
    const invalid = invalidCredit(input.amountNano);
    if (invalid) return Promise.reject(invalid);
    return this.group.enqueue(input.accountId, () => this.creditInTx(input));
  }

  async releaseHolds(filter: HoldsToRelease): Promise<number> {
    const open = await holdsToRelease(this.kysely, filter);
    const closed = await Promise.all(
      open.map((h) => this.group.enqueue(h.accountId, () => this.sweepInTx(h))),
    );
    return closed.filter(Boolean).length;
  }

  recordUsage(usage: UsageRecord): Promise<void> {
    return this.group.enqueue(undefined, () => {
      this.stmt.insertUsage.run(...usageValues(usage, 0, 0));
    });
  }

  recordRefusal(refusal: RefusalRecord): Promise<void> {
    return this.refusals.add(refusal);
  }

  /** Writes what is still counted or queued (before the connection is closed). */
  async close(): Promise<void> {
    await this.refusals.drain();
    this.group.drain();
  }

  /** One batch of refusal counts, each added to its row, in the next group commit. */
  private countRefusals(counts: readonly RefusalCount[]): Promise<void> {
    return this.group.enqueue(undefined, () => {
      for (const c of counts) {
        this.stmt.countRefusal.run(
          c.accountId,
          c.minuteStart,
          c.keyId,
          c.errorCode,
          c.httpStatus,
          c.requests,
        );
      }
    });
  }

  private placeInTx(input: PlaceHoldInput): PlaceHoldResult {
    const rows = this.accounts.of(input.accountId);
    const balance = rows.spendable(input.accountId);
    if (balance === undefined) return refusedHold(rows.state(input.accountId));
    const held = hold(balance, input.amountNano);
    if (!held.ok) return refusedHold({ balanceNano: balance, status: 'active' });
    rows.setBalance(input.accountId, held.next);
    this.stmt.insertHold.run(
      input.holdId,
      input.accountId,
      input.requestId,
      input.amountNano,
      input.owner,
      input.createdAt,
      input.expiresAt,
    );
    return PLACED;
  }

  private settleInTx(input: SettleInput): SettleResult {
    const held = this.closeHold(input.holdId, input.accountId, input.holdAmountNano)
      ? input.holdAmountNano
      : 0;
    const rows = this.accounts.of(input.accountId);
    const account = rows.figures(input.accountId);
    const settled = settle(account.balanceNano, held, input.costNano);
    account.balanceNano = settled.next;
    addSpend(account, settled.charged, input.usage.createdAt);
    rows.setFigures(input.accountId, account);
    // The usage row is the charge's record (migration 0007).
    if (isPlainAnswer(input.usage, settled.shortfall)) {
      this.stmt.insertAnswered.run(...answeredUsageValues(input.usage, settled.charged));
    } else {
      this.stmt.insertUsage.run(...usageValues(input.usage, settled.shortfall, settled.charged));
    }
    const result = {
      balanceNano: settled.next,
      chargedNano: settled.charged,
      shortfallNano: settled.shortfall,
    };
    if (input.idempotency) {
      this.stmt.finishIdempotent.run(
        input.idempotency.render(result),
        input.accountId,
        input.idempotency.key,
        input.usage.requestId,
      );
    }
    return result;
  }

  private releaseInTx(input: ReleaseInput): { balanceNano: number } {
    const held = this.closeHold(input.holdId, input.accountId, input.holdAmountNano)
      ? input.holdAmountNano
      : 0;
    const balanceNano = this.giveBack(input.accountId, held);
    if (input.usage) this.stmt.insertUsage.run(...usageValues(input.usage, 0, 0));
    return { balanceNano };
  }

  private creditInTx(input: { accountId: string; amountNano: number; note: string | null }): {
    balanceNano: number;
  } {
    const rows = this.accounts.of(input.accountId);
    const balanceNano = credit(rows.balance(input.accountId), input.amountNano);
    rows.setBalance(input.accountId, balanceNano);
    this.stmt.insertCredit.run(newId('led'), input.accountId, input.amountNano, input.note, this.now());
    return { balanceNano };
  }

  /** An open hold the sweeper picked, given back; false when it was closed meanwhile. */
  private sweepInTx(open: OpenHold): boolean {
    if (!this.closeHold(open.id, open.accountId, open.amountNano)) return false;
    if (open.amountNano > 0) this.giveBack(open.accountId, open.amountNano);
    return true;
  }

  /**
   * Closes an open hold — deletes its row, found by id, account and the amount it was placed with. False
   * when no such row is open (closed already: its money is never returned twice).
   */
  private closeHold(holdId: string, accountId: string, amountNano: number): boolean {
    return this.stmt.closeHold.run(holdId, accountId, amountNano).changes === 1;
  }

  /** Returns `held` to the account's balance; the balance after. */
  private giveBack(accountId: string, held: number): number {
    const rows = this.accounts.of(accountId);
    const balanceNano = release(rows.balance(accountId), held);
    if (held > 0) rows.setBalance(accountId, balanceNano);
    return balanceNano;
  }
}
