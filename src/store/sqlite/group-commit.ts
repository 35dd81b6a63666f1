import type SQLite from 'better-sqlite3';

/** Most operations committed together; more waiting go into the next commit, one event-loop turn later. */
const MAX_GROUP = 256;

interface Pending {
  /** The account whose row the operation changes (none for a usage row alone). */
  accountId: string | undefined;
  run: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/** What runs around each group's operations inside its transaction (the account rows, `account-rows.ts`). */
export interface GroupHooks {
  begin(group: readonly { accountId: string | undefined }[]): void;
  /** After the operations, before COMMIT. */
  end(): void;
  /** After the transaction, committed or rolled back. */
  forget(): void;
}

/**
 * Group commit on the serving connection. A commit costs far more than the statements in it (the WAL frames
 * of every touched page). So the writes of one request — place a hold, settle, release, record usage — are
 * queued, and all those queued within one event-loop turn are committed together in one BEGIN IMMEDIATE
 * transaction. A caller's promise settles only after the COMMIT, so nothing is acknowledged before it is as
 * durable as `synchronous` makes it, exactly as with one commit each. If one operation throws, the group is
 * rolled back and its operations are run again one transaction each, so only that one fails (a savepoint
 * per operation would do the same, at a higher cost on every group).
 *
 * A query-builder transaction open on the shared connection holds it across awaits: a group never starts
 * inside one; it waits for the next turn.
 */
export class GroupCommit {
  private readonly groupTx: (group: Pending[], outcomes: unknown[]) => void;
  private readonly singleTx: (op: Pending) => unknown;
  private queue: Pending[] = [];
  private scheduled = false;
  /** Set once BEGIN succeeded: tells a failed operation from a failed BEGIN. */
  private groupBegun = false;

  constructor(
    private readonly db: SQLite.Database,
    hooks: GroupHooks,
  ) {
    this.groupTx = db.transaction((group: Pending[], outcomes: unknown[]) => {
      this.groupBegun = true;
      hooks.begin(group);
      try {
        for (const op of group) outcomes.push(op.run());
        hooks.end();
      } finally {
        hooks.forget();
      }
    }).immediate;
    this.singleTx = db.transaction((op: Pending) => op.run()).immediate;
  }

  /** Runs `run` in the next group's transaction; settles after its COMMIT. */
  enqueue<T>(accountId: string | undefined, run: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ accountId, run, resolve: resolve as (value: unknown) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(this.flush);
      }
    });
  }

  /** Commits everything queued now (before the connection is closed). */
  drain(): void {
    while (this.queue.length > 0 && !this.db.inTransaction) this.commitGroup();
    // Only if a query-builder transaction is still open at close: nothing of these ran, so nothing is lost.
    for (const op of this.queue.splice(0)) op.reject(new Error('the store was closed before this write ran'));
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
}
