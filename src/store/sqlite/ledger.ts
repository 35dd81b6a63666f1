import type SQLite from 'better-sqlite3';
import type { Kysely } from 'kysely';
import {
  chargeCap,
  type KeyWindow,
  type KeyWindowRow,
  keyHold,
  keyRelease,
  keySettle,
  keyWindowOf,
  limitRefusal,
} from '../key-window-rules.js';
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
    // The key's limit, when it has one, in the same transaction as the balance.
    const key = input.keyId === undefined ? undefined : this.keyWindowOf(input.keyId);
    let counted: KeyWindow | undefined;
    if (key) {
      const outcome = keyHold(key, input.createdAt, input.amountNano);
      if (!outcome.ok) {
        return {
          ok: false,
          reason: 'key_limit_exceeded',
          balanceNano: balance,
          key: limitRefusal(key, input.createdAt),
        };
      }
      counted = outcome.next;
    }
    const held = hold(balance, input.amountNano);
    if (!held.ok) {
      const refused = refusedHold({ balanceNano: balance, status: 'active' });
      if (key) refused.key = limitRefusal(key, input.createdAt);
      return refused;
    }
    rows.setBalance(input.accountId, held.next);
    if (counted) this.writeKeyWindow(input.keyId as string, counted);
    this.stmt.insertHold.run(
      input.holdId,
      input.accountId,
      input.requestId,
      input.amountNano,
      input.owner,
      input.createdAt,
      input.expiresAt,
      input.keyId ?? null,
      counted ? counted.windowStart : null,
    );
    return counted ? { ok: true, keyWindow: counted.windowStart } : PLACED;
  }

  /** The key's limit and window figures; undefined when it has no limit. */
  private keyWindowOf(keyId: string): KeyWindow | undefined {
    const row = this.stmt.keyWindow.get(keyId) as KeyWindowRow | undefined;
    return row && keyWindowOf(row);
  }

  private writeKeyWindow(keyId: string, key: KeyWindow): void {
    this.stmt.setKeyWindow.run(key.windowStart, key.spentNano, key.heldNano, keyId);
  }

  /** The key's figures of the hold's window, when its limit counted the hold. */
  private countedKey(keyId: string | null | undefined, keyWindow: number | null | undefined) {
    if (keyId === undefined || keyId === null || keyWindow === undefined || keyWindow === null)
      return undefined;
    const key = this.keyWindowOf(keyId);
    return key && { keyId, key, window: keyWindow };
  }

  private settleInTx(input: SettleInput): SettleResult {
    const held = this.closeHold(input.holdId, input.accountId, input.holdAmountNano)
      ? input.holdAmountNano
      : 0;
    const rows = this.accounts.of(input.accountId);
    const account = rows.figures(input.accountId);
    // A key's limit bounds what the settle may charge beyond the hold; the rest is a shortfall.
    const counted = this.countedKey(input.keyId, input.keyWindow);
    const cost = counted
      ? Math.min(input.costNano, chargeCap(counted.key, counted.window, held))
      : input.costNano;
    const settled = settle(account.balanceNano, held, cost);
    settled.shortfall = input.costNano - settled.charged;
    account.balanceNano = settled.next;
    addSpend(account, settled.charged, input.usage.createdAt);
    rows.setFigures(input.accountId, account);
    if (counted) {
      this.writeKeyWindow(counted.keyId, keySettle(counted.key, counted.window, held, settled.charged));
    }
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
    this.giveBackToKey(input.keyId, input.keyWindow, held);
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
    this.giveBackToKey(open.keyId, open.keyWindow, open.amountNano);
    return true;
  }

  /** A closed hold of `held` leaves its key's window (when the key's limit counted it). */
  private giveBackToKey(
    keyId: string | null | undefined,
    keyWindow: number | null | undefined,
    held: number,
  ): void {
    if (held === 0) return;
    const counted = this.countedKey(keyId, keyWindow);
    if (counted) this.writeKeyWindow(counted.keyId, keyRelease(counted.key, counted.window, held));
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
