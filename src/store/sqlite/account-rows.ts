import { toNumber } from '../schema.js';
import { type SpendCounters, spendCountersOf } from '../spend.js';
import type { LedgerStatements } from './statements.js';

/** An account's balance and status, as the open transaction has them. */
export interface AccountState {
  balanceNano: number;
  status: string;
}

/** An account's balance and spend counters (src/store/spend.ts). */
export interface Figures extends SpendCounters {
  balanceNano: number;
}

/** An account's row as a group's transaction keeps it (`FiguresInGroup`). */
export interface AccountFigures extends Figures {
  status: string;
  changed: boolean;
}

/**
 * How an operation reads and writes its account's row inside the open transaction. The ledger's operations
 * read the row, apply the rule of `ledger-rules.ts` and write the result; the two ways below differ only in
 * how many statements that takes.
 */
export interface AccountRows {
  /** The balance of an account that may spend (active); undefined when it is disabled or missing. */
  spendable(accountId: string): number | undefined;
  /** The balance, whatever the status. Throws for no such account. */
  balance(accountId: string): number;
  /** The balance and status, to word a refused hold; undefined when there is no such account. */
  state(accountId: string): AccountState | undefined;
  /** A new balance; the spend counters stay. */
  setBalance(accountId: string, balanceNano: number): void;
  /** The balance and spend counters, to change and hand to `setFigures`. Throws for no such account. */
  figures(accountId: string): Figures;
  setFigures(accountId: string, figures: Figures): void;
}

/** One read and one write per operation: for an account with a single operation in the transaction. */
class RowPerOperation implements AccountRows {
  constructor(private readonly stmt: LedgerStatements) {}

  // Balances are read through toNumber: one beyond what a number keeps exactly is refused, not rounded.
  spendable(accountId: string): number | undefined {
    const balance = this.stmt.spendableBalance.get(accountId) as number | undefined;
    return balance === undefined ? undefined : toNumber(balance);
  }

  balance(accountId: string): number {
    const balance = this.stmt.balance.get(accountId) as number | undefined;
    if (balance === undefined) throw new Error(`no account ${accountId}`);
    return toNumber(balance);
  }

  state(accountId: string): AccountState | undefined {
    const row = this.stmt.accountState.get(accountId) as AccountState | undefined;
    if (row !== undefined) row.balanceNano = toNumber(row.balanceNano);
    return row;
  }

  setBalance(accountId: string, balanceNano: number): void {
    this.stmt.setBalance.run(balanceNano, accountId);
  }

  figures(accountId: string): Figures {
    const row = this.stmt.spendFigures.get(accountId) as number[] | undefined;
    if (row === undefined) throw new Error(`no account ${accountId}`);
    return {
      balanceNano: toNumber(row[0] as number),
      spendDay: toNumber(row[1] as number),
      spendDayNano: toNumber(row[2] as number),
      spendMonth: toNumber(row[3] as number),
      spendMonthNano: toNumber(row[4] as number),
    };
  }

  setFigures(accountId: string, figures: Figures): void {
    writeFigures(this.stmt, accountId, figures);
  }
}

/**
 * The rows of the accounts with several operations in one group: each read once, at its first operation;
 * changed in memory, in queue order; written once by `write`, last in the transaction. That is sound
 * because the group's transaction is BEGIN IMMEDIATE: no other connection writes until its COMMIT, and
 * nothing else runs on this one meanwhile; a rollback discards the figures with everything else. `forget`
 * after the transaction, committed or not.
 */
class FiguresInGroup implements AccountRows {
  /** null: no such account. */
  private accounts = new Map<string, AccountFigures | null>();

  constructor(private readonly stmt: LedgerStatements) {}

  spendable(accountId: string): number | undefined {
    const account = this.read(accountId);
    return account !== null && account.status === 'active' ? account.balanceNano : undefined;
  }

  balance(accountId: string): number {
    return this.existing(accountId).balanceNano;
  }

  state(accountId: string): AccountState | undefined {
    return this.read(accountId) ?? undefined;
  }

  setBalance(accountId: string, balanceNano: number): void {
    const account = this.existing(accountId);
    account.balanceNano = balanceNano;
    account.changed = true;
  }

  /** The figures themselves: a settle changes them in place. */
  figures(accountId: string): Figures {
    return this.existing(accountId);
  }

  setFigures(accountId: string, _figures: Figures): void {
    this.existing(accountId).changed = true;
  }

  write(): void {
    for (const [accountId, account] of this.accounts) {
      if (account?.changed) writeFigures(this.stmt, accountId, account);
    }
  }

  forget(): void {
    this.accounts = afterGroup(this.accounts);
  }

  private read(accountId: string): AccountFigures | null {
    let account = this.accounts.get(accountId);
    if (account === undefined) {
      const row = this.stmt.accountFigures.get(accountId) as FiguresRow | undefined;
      account = row ? accountFiguresOf(row) : null;
      this.accounts.set(accountId, account);
    }
    return account;
  }

  private existing(accountId: string): AccountFigures {
    const account = this.read(accountId);
    if (account === null) throw new Error(`no account ${accountId}`);
    return account;
  }
}

/**
 * The account rows of the group whose transaction is running. When a group holds several operations of
 * one account (many calls of one customer at once), that account's row is read once and written once
 * (`FiguresInGroup`); an account with one operation keeps a read and a write of its own, which are fewer
 * for it. Operations run again one transaction each (after a failed group) find no group, and take the latter.
 */
export class GroupAccounts {
  private readonly single: RowPerOperation;
  private readonly grouped: FiguresInGroup;
  /** The accounts with more than one operation in the running group; empty otherwise. */
  private repeated = new Set<string>();

  constructor(stmt: LedgerStatements) {
    this.single = new RowPerOperation(stmt);
    this.grouped = new FiguresInGroup(stmt);
  }

  /** How an operation of the running group reaches its account's row. */
  of(accountId: string): AccountRows {
    return this.repeated.has(accountId) ? this.grouped : this.single;
  }

  /** At the start of a group's transaction: finds the accounts with more than one operation in it. */
  begin(group: readonly { accountId: string | undefined }[]): void {
    if (group.length < 2) return;
    const seen = new Set<string>();
    for (const op of group) {
      if (op.accountId === undefined) continue;
      if (seen.has(op.accountId)) this.repeated.add(op.accountId);
      else seen.add(op.accountId);
    }
  }

  /** After the group's operations, before COMMIT: writes the rows kept in memory. */
  end(): void {
    this.grouped.write();
  }

  /** After the group's transaction, committed or rolled back. */
  forget(): void {
    this.repeated = afterGroup(this.repeated);
    this.grouped.forget();
  }
}

type AccountRow = { balance_nano: number; status: string };
export type FiguresRow = AccountRow & {
  spend_day: number;
  spend_day_nano: number;
  spend_month: number;
  spend_month_nano: number;
};

/**
 * The figures with the row's status, as one object literal. Written as a spread followed by two more
 * properties, each copy got a hidden class of its own: V8 made a new map (and descriptor array) per read,
 * about one per group commit, allocated straight in the old generation.
 */
export function accountFiguresOf(row: FiguresRow): AccountFigures {
  const counters = spendCountersOf(row);
  return {
    balanceNano: toNumber(row.balance_nano),
    spendDay: counters.spendDay,
    spendDayNano: counters.spendDayNano,
    spendMonth: counters.spendMonth,
    spendMonthNano: counters.spendMonthNano,
    status: row.status,
    changed: false,
  };
}

/** An account's balance and spend counters, written back in one statement. */
function writeFigures(stmt: LedgerStatements, accountId: string, figures: Figures): void {
  stmt.setFigures.run(
    figures.balanceNano,
    figures.spendDay,
    figures.spendDayNano,
    figures.spendMonth,
    figures.spendMonthNano,
    accountId,
  );
}

/**
 * The collection for the next group: the same one when the group left it empty, a new one otherwise. The
 * ledger lives in the old generation, and so do collections it kept for long; V8 gives such a collection
 * every new table straight in the old generation: `clear()` always makes one, and so does the shrink a
 * `delete` down to empty brings. Emptying the collections a group with several calls of one account fills
 * would leave old-generation garbage behind per such group; a new collection per group is young, and dies
 * young.
 */
export function afterGroup<C extends Set<unknown> | Map<unknown, unknown>>(collection: C): C {
  if (collection.size === 0) return collection;
  return (collection instanceof Set ? new Set() : new Map()) as C;
}
