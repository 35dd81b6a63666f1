import type SQLite from 'better-sqlite3';
import type { RefusalCount } from './refusal-counts.js';
import { refusedHold, toNumber } from './schema.js';
import { addSpend, type SpendCounters, spendCountersOf } from './spend.js';
import type {
  KeyAuthRecord,
  PlaceHoldInput,
  PlaceHoldResult,
  ReleaseInput,
  SettleInput,
  SettleResult,
  UsageRecord,
} from './types.js';
import {
  ANSWERED_USAGE_SQL,
  answeredUsageValues,
  isPlainAnswer,
  USAGE_COLUMNS,
  usageValues,
} from './usage-row.js';

type Row = Record<string, number | string | null>;

/** Most operations committed together; more waiting go into the next commit, one event-loop turn later. */
const MAX_GROUP = 256;

interface Pending {
  /** The account the operation changes the balance of (none for a usage row alone). */
  accountId: string | undefined;
  run: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * How an operation reads and changes an account's balance inside the open transaction. Both ways give the
 * same results; they differ in how many statements they run.
 */
interface Balances {
  /** DESIGN.md "Holds": takes `amountNano` only from an active account whose balance covers it. */
  take(accountId: string, amountNano: number): PlaceHoldResult;
  /** Adds `amountNano` (≥ 0); returns the new balance. Throws for no such account. */
  add(accountId: string, amountNano: number): number;
  /** Throws for no such account. */
  get(accountId: string): number;
  /** The balance and spend counters, to change and hand to `update`. Throws for no such account. */
  figures(accountId: string): Figures;
  update(accountId: string, figures: Figures): void;
}

/** An account's balance and spend counters (src/store/spend.ts). */
interface Figures extends SpendCounters {
  balanceNano: number;
}

/** An account's row as the open transaction has it (`FiguresInTransaction`). */
export interface AccountFigures extends Figures {
  status: string;
  changed: boolean;
}

/**
 * The per-request statements of the embedded SQLite store, prepared once: the same rows and the same
 * arithmetic as KyselyStore's generic versions, without building SQL or hopping through promises per
 * statement.
 *
 * **Group commit.** A commit costs far more than the statements in it (the WAL frames of every touched
 * page). So the writes of one request — place a hold, settle, release, record usage — are queued, and
 * all those queued within one event-loop turn are committed together in one BEGIN IMMEDIATE transaction.
 * A caller's promise settles only after the COMMIT, so nothing is acknowledged before it is as durable as
 * `synchronous` makes it, exactly as with one commit each. If one operation throws, the group is rolled
 * back and its operations are run again one transaction each, so only that one fails (a savepoint per
 * operation would do the same but doubles the cost). Measured (docs/performance.md): place + settle cost
 * 131 µs of CPU per request one commit each, 38 µs in groups of 25, 73 µs with a savepoint each.
 *
 * **An account's balance, once per group.** When a group holds several operations of one account (many
 * calls of one customer at once), that account's row is read once, at its first operation; its holds,
 * settles and releases then work on that figure, in queue order — a hold is taken only when the figure
 * covers it, exactly the condition of DESIGN.md's atomic statement — and the new balance is written once,
 * last in the transaction. That is sound because the group's transaction is BEGIN IMMEDIATE: no other
 * connection writes until its COMMIT, and nothing else runs on this one meanwhile; a rollback discards
 * the figures with everything else. An account with one operation in the group keeps the single
 * statements (`DirectBalances`), which are fewer for it. Measured in docs/performance.md, seventeenth round.
 *
 * A Kysely transaction open on the shared connection (`inTransaction`) holds it across awaits: a group
 * never starts inside one (it waits for the next turn), and reads take the generic path meanwhile.
 */
export class SqliteHotPath {
  private readonly stmt: ReturnType<typeof prepareAll>;
  private readonly groupTx: (group: Pending[], outcomes: unknown[]) => void;
  private readonly singleTx: (op: Pending) => unknown;
  private queue: Pending[] = [];
  private scheduled = false;
  /** Set once BEGIN succeeded: tells a failed operation from a failed BEGIN. */
  private groupBegun = false;
  private readonly direct: Balances;
  private readonly inTransaction: FiguresInTransaction;
  /** The accounts with more than one operation in the group whose transaction is running; empty otherwise. */
  private repeated = new Set<string>();
  private countRefusal: SQLite.Statement | undefined;

  constructor(private readonly db: SQLite.Database) {
    this.stmt = prepareAll(db);
    this.direct = new DirectBalances(this.stmt);
    this.inTransaction = new FiguresInTransaction(this.stmt);
    // `repeated` and the figures live inside this function only: filled at its start, emptied before the
    // transaction commits or rolls back. A group's operations run again alone (`singleTx`) find both empty
    // and take the single statements.
    this.groupTx = db.transaction((group: Pending[], outcomes: unknown[]) => {
      this.groupBegun = true;
      this.findRepeated(group);
      try {
        for (const op of group) outcomes.push(op.run());
        this.inTransaction.write();
      } finally {
        this.repeated = afterGroup(this.repeated);
        this.inTransaction.forget();
      }
    }).immediate;
    this.singleTx = db.transaction((op: Pending) => op.run()).immediate;
  }

  /** Whether a (Kysely) transaction is open on the connection right now. */
  get busy(): boolean {
    return this.db.inTransaction;
  }

  findKeyByHash(keyHash: string): KeyAuthRecord | undefined {
    const row = this.stmt.findKey.get(keyHash) as Row | undefined;
    if (!row) return undefined;
    return {
      keyId: row.key_id as string,
      keyName: row.key_name as string,
      accountId: row.account_id as string,
      accountStatus: row.account_status as KeyAuthRecord['accountStatus'],
      revoked: row.revoked_at !== null,
    };
  }

  placeHold(input: PlaceHoldInput): Promise<PlaceHoldResult> {
    return this.enqueue(input.accountId, () => this.placeInTx(input));
  }

  settle(input: SettleInput): Promise<SettleResult> {
    return this.enqueue(input.accountId, () => this.settleInTx(input));
  }

  release(input: ReleaseInput): Promise<{ balanceNano: number }> {
    return this.enqueue(input.accountId, () => this.releaseInTx(input));
  }

  recordUsage(usage: UsageRecord): Promise<void> {
    return this.enqueue(undefined, () => {
      this.stmt.insertUsage.run(...usageValues(usage, 0, 0));
    });
  }

  /** Adds each count to its row of `refusals` (created by its first refusal), in the next group commit. */
  countRefusals(counts: readonly RefusalCount[]): Promise<void> {
    return this.enqueue(undefined, () => {
      // Prepared at first use, not with the others: a store opened on a database migrated only up to an
      // earlier migration (as the tests of older databases do) has no such table.
      this.countRefusal ??= this.db.prepare(
        `insert into refusals (account_id, minute_start, key_id, error_code, http_status, requests)
         values (?, ?, ?, ?, ?, ?)
         on conflict (account_id, minute_start, key_id, error_code) do update set requests = requests + excluded.requests`,
      );
      for (const c of counts) {
        this.countRefusal.run(c.accountId, c.minuteStart, c.keyId, c.errorCode, c.httpStatus, c.requests);
      }
    });
  }

  /** Commits everything queued now (before the connection is closed). */
  drain(): void {
    while (this.queue.length > 0 && !this.db.inTransaction) this.commitGroup();
    // Only if a Kysely transaction is still open at close: nothing of these ran, so nothing is lost.
    for (const op of this.queue.splice(0)) op.reject(new Error('the store was closed before this write ran'));
  }

  private enqueue<T>(accountId: string | undefined, run: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ accountId, run, resolve: resolve as (value: unknown) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(this.flush);
      }
    });
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    if (this.queue.length === 0) return;
    if (!this.db.inTransaction) this.commitGroup();
    if (this.queue.length > 0) {
      this.scheduled = true;
      setImmediate(this.flush);
    }
  };

  private commitGroup(): void {
    const group = this.queue.length <= MAX_GROUP ? this.queue : this.queue.slice(0, MAX_GROUP);
    this.queue = this.queue.length <= MAX_GROUP ? [] : this.queue.slice(MAX_GROUP);
    const outcomes: unknown[] = [];
    this.groupBegun = false;
    try {
      this.groupTx(group, outcomes);
    } catch (error) {
      // The whole group was rolled back. An operation that threw (outcomes stops at it) is retried with
      // the others one transaction each, so only it fails; a failed BEGIN or COMMIT (the file locked past
      // busy_timeout, a full disk) fails them all.
      if (this.groupBegun && outcomes.length < group.length && this.db.open) {
        for (const op of group) this.runAlone(op);
      } else {
        for (const op of group) op.reject(error);
      }
      return;
    }
    for (let i = 0; i < group.length; i++) (group[i] as Pending).resolve(outcomes[i]);
  }

  /** Fills `repeated` with the accounts that have more than one operation in `group`. */
  private findRepeated(group: Pending[]): void {
    if (group.length < 2) return;
    const seen = new Set<string>();
    for (const op of group) {
      if (op.accountId === undefined) continue;
      if (seen.has(op.accountId)) this.repeated.add(op.accountId);
      else seen.add(op.accountId);
    }
  }

  private runAlone(op: Pending): void {
    try {
      op.resolve(this.singleTx(op));
    } catch (error) {
      op.reject(error);
    }
  }

  /** How this operation of the group reaches its account's balance. */
  private balances(accountId: string): Balances {
    return this.repeated.has(accountId) ? this.inTransaction : this.direct;
  }

  private placeInTx(input: PlaceHoldInput): PlaceHoldResult {
    const taken = this.balances(input.accountId).take(input.accountId, input.amountNano);
    if (!taken.ok) return taken;
    this.stmt.insertHold.run(
      input.holdId,
      input.accountId,
      input.requestId,
      input.amountNano,
      input.owner,
      input.createdAt,
      input.expiresAt,
    );
    return taken;
  }

  /**
   * Closes an open hold — deletes its row, found by id, account and the amount it was placed with — and
   * returns that amount; 0 when no such row is open (closed already: its money is never returned twice).
   */
  private closeHold(holdId: string, accountId: string, amountNano: number): number {
    return this.stmt.closeHold.run(holdId, accountId, amountNano).changes === 1 ? amountNano : 0;
  }

  private settleInTx(input: SettleInput): SettleResult {
    const held = this.closeHold(input.holdId, input.accountId, input.holdAmountNano);
    const balances = this.balances(input.accountId);
    const account = balances.figures(input.accountId);
    // Charge from the hold first, then from the balance as far as it goes; never below zero. (When the
    // hold covers the cost, the usual case, the rest of it goes back to the balance.)
    const available = account.balanceNano + held;
    const chargedNano = Math.min(input.costNano, available);
    const next = available - chargedNano;
    account.balanceNano = next;
    addSpend(account, chargedNano, input.usage.createdAt);
    balances.update(input.accountId, account);
    const shortfallNano = input.costNano - chargedNano;
    // The usage row is the charge's record (migration 0007).
    if (isPlainAnswer(input.usage, shortfallNano)) {
      this.stmt.insertAnswered.run(...answeredUsageValues(input.usage, chargedNano));
    } else {
      this.stmt.insertUsage.run(...usageValues(input.usage, shortfallNano, chargedNano));
    }
    const settled = { balanceNano: next, chargedNano, shortfallNano };
    if (input.idempotency) {
      this.stmt.finishIdempotent.run(
        input.idempotency.render(settled),
        input.accountId,
        input.idempotency.key,
        input.usage.requestId,
      );
    }
    return settled;
  }

  private releaseInTx(input: ReleaseInput): { balanceNano: number } {
    const held = this.closeHold(input.holdId, input.accountId, input.holdAmountNano);
    const balances = this.balances(input.accountId);
    const next = held > 0 ? balances.add(input.accountId, held) : balances.get(input.accountId);
    if (input.usage) this.stmt.insertUsage.run(...usageValues(input.usage, 0, 0));
    return { balanceNano: next };
  }
}

type Statements = ReturnType<typeof prepareAll>;

/** One statement per step: for an account with a single operation in the transaction. */
class DirectBalances implements Balances {
  constructor(private readonly stmt: Statements) {}

  take(accountId: string, amountNano: number): PlaceHoldResult {
    // The one atomic statement of DESIGN.md "Holds": no row updated → nothing changed.
    if (this.stmt.takeHold.run(amountNano, accountId, amountNano).changes === 1) return PLACED;
    return refusedHold(this.stmt.accountState.get(accountId) as AccountRow | undefined);
  }

  add(accountId: string, amountNano: number): number {
    this.stmt.addBalance.run(amountNano, accountId);
    return this.get(accountId);
  }

  get(accountId: string): number {
    const balance = this.stmt.balance.get(accountId) as number | undefined;
    if (balance === undefined) throw new Error(`no account ${accountId}`);
    return toNumber(balance);
  }

  figures(accountId: string): Figures {
    const row = this.stmt.accountFigures.get(accountId) as FiguresRow | undefined;
    if (row === undefined) throw new Error(`no account ${accountId}`);
    return figuresOf(row);
  }

  update(accountId: string, figures: Figures): void {
    writeFigures(this.stmt, accountId, figures);
  }
}

/**
 * The balances of the accounts with several operations in one group: each row read once, at the first
 * operation; changed in memory; written once by `write`, last in the transaction. `forget` after the
 * transaction, committed or not.
 */
class FiguresInTransaction implements Balances {
  /** null: no such account. */
  private accounts = new Map<string, AccountFigures | null>();

  constructor(private readonly stmt: Statements) {}

  take(accountId: string, amountNano: number): PlaceHoldResult {
    const account = this.read(accountId);
    if (account === null || account.status !== 'active' || account.balanceNano < amountNano) {
      return refusedHold(
        account === null ? undefined : { balance_nano: account.balanceNano, status: account.status },
      );
    }
    account.balanceNano -= amountNano;
    account.changed = true;
    return PLACED;
  }

  add(accountId: string, amountNano: number): number {
    const account = this.existing(accountId);
    if (amountNano !== 0) {
      account.balanceNano += amountNano;
      account.changed = true;
    }
    return account.balanceNano;
  }

  get(accountId: string): number {
    return this.existing(accountId).balanceNano;
  }

  /** The figures themselves: a settle changes them in place. */
  figures(accountId: string): Figures {
    return this.existing(accountId);
  }

  update(accountId: string, _figures: Figures): void {
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

type AccountRow = { balance_nano: number; status: string };
export type FiguresRow = AccountRow & {
  spend_day: number;
  spend_day_nano: number;
  spend_month: number;
  spend_month_nano: number;
};

function figuresOf(row: FiguresRow): Figures {
  return { balanceNano: toNumber(row.balance_nano), ...spendCountersOf(row) };
}

/**
 * The figures with the row's status, as one object literal. Written as a spread followed by two more
 * properties, each copy got a hidden class of its own: V8 made a new map (and descriptor array) per read,
 * ~1 per group commit, allocated straight in the old generation (docs/performance.md, twenty-fourth
 * round).
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
function writeFigures(stmt: Statements, accountId: string, figures: Figures): void {
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
 * store lives in the old generation, and so do collections it kept for long; V8 gives such a collection
 * every new table straight in the old generation: `clear()` always makes one, and so does the shrink a
 * `delete` down to empty brings. Emptying the two collections a group with several calls of one account
 * fills left 120-270 bytes of old-generation garbage per such group, a large share of what brought the
 * mark-compacts at half the maximum rate; a new collection per group is young, and dies young
 * (docs/performance.md, twenty-fourth and twenty-fifth rounds).
 */
export function afterGroup<C extends Set<unknown> | Map<unknown, unknown>>(collection: C): C {
  if (collection.size === 0) return collection;
  return (collection instanceof Set ? new Set() : new Map()) as C;
}

const PLACED: PlaceHoldResult = Object.freeze({ ok: true });

/**
 * Single-column statements are plucked: the value itself, not a row object built per call. No statement
 * has a RETURNING clause: SQLite runs one through an ephemeral table (a B-tree opened, its first page
 * zeroed, closed) on every execution, which cost ~20,000 instructions per request over the three such
 * updates of a call, more than the plain update and a read of the same row, already in the page cache
 * (docs/performance.md).
 */
function prepareAll(db: SQLite.Database) {
  return {
    findKey: db.prepare(
      `select k.id as key_id, k.name as key_name, k.account_id as account_id, k.revoked_at as revoked_at,
              a.status as account_status
         from api_keys k join accounts a on a.id = k.account_id
        where k.key_hash = ?`,
    ),
    takeHold: db.prepare(
      `update accounts set balance_nano = balance_nano - ?
        where id = ? and status = 'active' and balance_nano >= ?`,
    ),
    accountState: db.prepare('select balance_nano, status from accounts where id = ?'),
    accountFigures: db.prepare(
      `select balance_nano, status, spend_day, spend_day_nano, spend_month, spend_month_nano
         from accounts where id = ?`,
    ),
    insertHold: db.prepare(
      `insert into holds (id, account_id, request_id, amount_nano, owner, created_at, expires_at)
       values (?, ?, ?, ?, ?, ?, ?)`,
    ),
    closeHold: db.prepare('delete from holds where id = ? and account_id = ? and amount_nano = ?'),
    balance: db.prepare('select balance_nano from accounts where id = ?').pluck(),
    setFigures: db.prepare(
      `update accounts set balance_nano = ?, spend_day = ?, spend_day_nano = ?, spend_month = ?,
                           spend_month_nano = ?
        where id = ?`,
    ),
    addBalance: db.prepare('update accounts set balance_nano = balance_nano + ? where id = ?'),
    insertUsage: db.prepare(
      `insert into usage (${USAGE_COLUMNS.join(', ')}) values (${USAGE_COLUMNS.map(() => '?').join(', ')})`,
    ),
    insertAnswered: db.prepare(
      `insert into usage (${USAGE_COLUMNS.join(', ')}) values (${ANSWERED_USAGE_SQL})`,
    ),
    finishIdempotent: db.prepare(
      `update idempotency set state = 'done', response_json = ?
        where account_id = ? and idem_key = ? and request_id = ?`,
    ),
  };
}
