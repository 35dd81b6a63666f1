import type { RefusalRecord } from './types.js';

const MINUTE_MS = 60_000;
/** Counts per statement of the general path (6 parameters each: well within both databases' limits). */
export const REFUSAL_BATCH = 500;

/** Refusals of one account, minute, key and error code, added up before they are written. */
export interface RefusalCount {
  accountId: string;
  /** Start of the minute, epoch ms. */
  minuteStart: number;
  keyId: string;
  errorCode: string;
  httpStatus: number;
  requests: number;
}

/** The start of the minute a refusal counts in. */
export function minuteOf(at: number): number {
  return Math.floor(at / MINUTE_MS) * MINUTE_MS;
}

interface Waiter {
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * Adds refusals up in memory and writes them one batch at a time: the refusals that arrive while a batch is
 * being written, or within one event-loop turn, go into the next one as one count per account, minute, key
 * and code. A flood from one key then costs one upsert per batch instead of a write per refused call (and,
 * on PostgreSQL, never has two upserts of one row waiting on each other's lock). A caller's promise
 * settles when the batch holding its refusal is committed, or fails with it.
 */
export class RefusalCounter {
  private pending = new Map<string, RefusalCount>();
  private waiters: Waiter[] = [];
  private scheduled = false;
  /** The batch being written, if any. */
  private writing: Promise<void> | undefined;

  /** `write` commits one batch (sorted by key, so instances writing at once lock rows in one order). */
  constructor(private readonly write: (counts: RefusalCount[]) => Promise<void>) {}

  add(refusal: RefusalRecord): Promise<void> {
    const minuteStart = minuteOf(refusal.at);
    const key = `${refusal.accountId}\n${minuteStart}\n${refusal.keyId}\n${refusal.errorCode}`;
    const count = this.pending.get(key);
    if (count) count.requests += 1;
    else {
      this.pending.set(key, {
        accountId: refusal.accountId,
        minuteStart,
        keyId: refusal.keyId,
        errorCode: refusal.errorCode,
        httpStatus: refusal.httpStatus,
        requests: 1,
      });
    }
    return new Promise<void>((resolve, reject) => {
      this.waiters.push({ resolve, reject });
      this.schedule();
    });
  }

  /** Writes what is pending and waits for every batch (before the store closes). */
  async drain(): Promise<void> {
    while (this.writing || this.pending.size > 0) {
      if (!this.writing) this.flush();
      await this.writing?.catch(() => undefined);
    }
  }

  private schedule(): void {
    if (this.scheduled || this.writing) return;
    this.scheduled = true;
    setImmediate(this.flush);
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    if (this.writing || this.pending.size === 0) return;
    const keys = [...this.pending.keys()].sort();
    const counts = keys.map((k) => this.pending.get(k) as RefusalCount);
    const waiters = this.waiters;
    this.pending = new Map();
    this.waiters = [];
    const writing = Promise.resolve()
      .then(() => this.write(counts))
      .then(
        () => {
          for (const w of waiters) w.resolve();
        },
        (error: unknown) => {
          for (const w of waiters) w.reject(error);
        },
      )
      .finally(() => {
        this.writing = undefined;
        if (this.pending.size > 0) this.schedule();
      });
    this.writing = writing;
  };
}
