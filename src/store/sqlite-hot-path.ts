import type SQLite from 'better-sqlite3';
import { timeOrderedHex } from '../random.js';
import { refusedHold, toNumber } from './schema.js';
import type {
  KeyAuthRecord,
  PlaceHoldInput,
  PlaceHoldResult,
  ReleaseInput,
  SettleInput,
  SettleResult,
  UsageRecord,
} from './types.js';
import { USAGE_COLUMNS, usageValues } from './usage-row.js';

type Row = Record<string, number | string | null>;

/** Most operations committed together; more waiting go into the next commit, one event-loop turn later. */
const MAX_GROUP = 256;

interface Pending {
  run: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
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

  constructor(
    private readonly db: SQLite.Database,
    private readonly now: () => number,
  ) {
    this.stmt = prepareAll(db);
    this.groupTx = db.transaction((group: Pending[], outcomes: unknown[]) => {
      this.groupBegun = true;
      for (const op of group) outcomes.push(op.run());
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
    return this.enqueue(() => this.placeInTx(input));
  }

  settle(input: SettleInput): Promise<SettleResult> {
    return this.enqueue(() => this.settleInTx(input));
  }

  release(input: ReleaseInput): Promise<{ balanceNano: number }> {
    return this.enqueue(() => this.releaseInTx(input));
  }

  recordUsage(usage: UsageRecord): Promise<void> {
    return this.enqueue(() => {
      this.stmt.insertUsage.run(...usageValues(usage, 0));
    });
  }

  /** Commits everything queued now (before the connection is closed). */
  drain(): void {
    while (this.queue.length > 0 && !this.db.inTransaction) this.commitGroup();
    // Only if a Kysely transaction is still open at close: nothing of these ran, so nothing is lost.
    for (const op of this.queue.splice(0)) op.reject(new Error('the store was closed before this write ran'));
  }

  private enqueue<T>(run: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ run, resolve: resolve as (value: unknown) => void, reject });
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

  private runAlone(op: Pending): void {
    try {
      op.resolve(this.singleTx(op));
    } catch (error) {
      op.reject(error);
    }
  }

  private placeInTx(input: PlaceHoldInput): PlaceHoldResult {
    // The one atomic statement of DESIGN.md "Holds": no row updated → nothing changed.
    if (this.stmt.takeHold.run(input.amountNano, input.accountId, input.amountNano).changes === 0) {
      return refusedHold(
        this.stmt.accountState.get(input.accountId) as { balance_nano: number; status: string } | undefined,
      );
    }
    this.stmt.insertHold.run(
      input.holdId,
      input.accountId,
      input.requestId,
      input.amountNano,
      input.owner,
      input.createdAt,
      input.expiresAt,
    );
    return { ok: true };
  }

  /**
   * Closes an open hold — deletes its row, found by id, account and the amount it was placed with — and
   * returns that amount; 0 when no such row is open (closed already: its money is never returned twice).
   */
  private closeHold(holdId: string, accountId: string, amountNano: number): number {
    return this.stmt.closeHold.run(holdId, accountId, amountNano).changes === 1 ? amountNano : 0;
  }

  private balanceOf(accountId: string): number {
    const balance = this.stmt.balance.get(accountId) as number | undefined;
    if (balance === undefined) throw new Error(`no account ${accountId}`);
    return toNumber(balance);
  }

  /** Adds `amountNano` (≥ 0) to a balance; returns the new balance (`balanceOf` throws for no account). */
  private addToBalance(accountId: string, amountNano: number): number {
    this.stmt.addBalance.run(amountNano, accountId);
    return this.balanceOf(accountId);
  }

  private settleInTx(input: SettleInput): SettleResult {
    const held = this.closeHold(input.holdId, input.accountId, input.holdAmountNano);
    // Charge from the hold first, then from the balance as far as it goes; never below zero.
    let chargedNano: number;
    let next: number;
    if (input.costNano <= held) {
      // The usual case: the hold covers the cost; the rest of it goes back to the balance.
      chargedNano = input.costNano;
      next = this.addToBalance(input.accountId, held - input.costNano);
    } else {
      const available = this.balanceOf(input.accountId) + held;
      chargedNano = Math.min(input.costNano, available);
      next = available - chargedNano;
      this.stmt.setBalance.run(next, input.accountId);
    }
    const shortfallNano = input.costNano - chargedNano;
    if (chargedNano > 0) {
      this.stmt.insertCharge.run(
        `led_${timeOrderedHex(6)}`,
        input.accountId,
        chargedNano,
        input.usage.requestId,
        this.now(),
      );
    }
    this.stmt.insertUsage.run(...usageValues(input.usage, shortfallNano));
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
    const next = held > 0 ? this.addToBalance(input.accountId, held) : this.balanceOf(input.accountId);
    if (input.usage) this.stmt.insertUsage.run(...usageValues(input.usage, 0));
    return { balanceNano: next };
  }
}

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
    insertHold: db.prepare(
      `insert into holds (id, account_id, request_id, amount_nano, owner, created_at, expires_at)
       values (?, ?, ?, ?, ?, ?, ?)`,
    ),
    closeHold: db.prepare('delete from holds where id = ? and account_id = ? and amount_nano = ?'),
    balance: db.prepare('select balance_nano from accounts where id = ?').pluck(),
    setBalance: db.prepare('update accounts set balance_nano = ? where id = ?'),
    addBalance: db.prepare('update accounts set balance_nano = balance_nano + ? where id = ?'),
    insertCharge: db.prepare(
      `insert into ledger (id, account_id, kind, amount_nano, request_id, note, created_at)
       values (?, ?, 'charge', ?, ?, null, ?)`,
    ),
    insertUsage: db.prepare(
      `insert into usage (${USAGE_COLUMNS.join(', ')}) values (${USAGE_COLUMNS.map(() => '?').join(', ')})`,
    ),
    finishIdempotent: db.prepare(
      `update idempotency set state = 'done', response_json = ?
        where account_id = ? and idem_key = ? and request_id = ?`,
    ),
  };
}
