import { GatewayError } from '../errors.js';

/**
 * How long a dashboard report may take, its wait for a turn included (`DASHBOARD_REPORT_TIMEOUT_MS`). The
 * PostgreSQL store already cancelled statements after `DATABASE_STATEMENT_TIMEOUT_MS` (5 s by default);
 * the same bound now holds on SQLite, where a report had none.
 */
export const DEFAULT_REPORT_TIMEOUT_MS = 5_000;

/**
 * Reports running at once per process: the SQLite reader's threads, or PostgreSQL connections of the pool
 * (out of `DATABASE_POOL_MAX`, 10 by default: the rest stay free for the API's holds and settles).
 */
export const DEFAULT_REPORT_SLOTS = 2;

/**
 * Reports of one account running at once. Below the slots, so the reports of one account, however many it
 * sends, always leave a slot to the others; the rest of its reports wait their turn, one account after
 * another (`FairQueue`).
 */
export const DEFAULT_REPORTS_PER_ACCOUNT = 1;

/** Who a report is for when it reads every account (the administration pages): one lane for them all. */
export const ADMIN_REPORTS = 'admin';

export interface ReportLimits {
  /** See {@link DEFAULT_REPORT_TIMEOUT_MS}. */
  timeoutMs: number;
  /** See {@link DEFAULT_REPORT_SLOTS}. */
  slots: number;
  /** See {@link DEFAULT_REPORTS_PER_ACCOUNT}. */
  perAccount: number;
}

export function reportLimits(overrides: Partial<ReportLimits> = {}): ReportLimits {
  const limits = {
    timeoutMs: overrides.timeoutMs ?? DEFAULT_REPORT_TIMEOUT_MS,
    slots: overrides.slots ?? DEFAULT_REPORT_SLOTS,
    perAccount: overrides.perAccount ?? DEFAULT_REPORTS_PER_ACCOUNT,
  };
  if (!(limits.slots >= 1 && limits.perAccount >= 1 && limits.timeoutMs >= 1)) {
    throw new Error('report limits must be at least 1');
  }
  return limits;
}

/**
 * A report stopped by its time bound: 503 `service_unavailable` in the spec's error shape, worded for the
 * dashboard's user. `waiting`: it never started (the account's own reports before it, or every slot busy
 * with other accounts' reports, for the whole bound); `running`: its query ran past the bound and was
 * interrupted.
 */
export class ReportTimeoutError extends GatewayError {
  constructor(
    readonly stage: 'waiting' | 'running',
    readonly timeoutMs: number,
  ) {
    const seconds = Number((timeoutMs / 1000).toFixed(3));
    super(
      'service_unavailable',
      stage === 'running'
        ? `This report took longer than ${seconds} s and was stopped. Choose a shorter period or one key, or try again later.`
        : `This report took too long: it could not start within ${seconds} s, as your other reports (or many others') were still running. Try again shortly.`,
      // Waiting, a retry may find a slot free; running over the bound, the same report would again.
      stage === 'waiting' ? { retryAfterSeconds: Math.max(1, Math.ceil(timeoutMs / 1000)) } : {},
    );
    this.name = 'ReportTimeoutError';
  }
}

/**
 * Waiting work, one line per owner (account), served in turn: `take` gives the first job of the first
 * owner in line that is below its limit of jobs running, and sends that owner to the back of the line. So
 * an account that sent thirty reports gets one turn, then every other waiting account gets one, and so on,
 * instead of all thirty being served before anyone else (first come, first served).
 */
export class FairQueue<J extends { owner: string }> {
  /** Owners with waiting jobs, in turn order (a Map keeps insertion order). */
  private readonly waiting = new Map<string, J[]>();
  private readonly running = new Map<string, number>();
  private count = 0;

  constructor(private readonly perOwner: number) {}

  /** Jobs waiting. */
  get size(): number {
    return this.count;
  }

  push(job: J): void {
    const jobs = this.waiting.get(job.owner);
    if (jobs) jobs.push(job);
    else this.waiting.set(job.owner, [job]);
    this.count += 1;
  }

  /** Takes a job out of the line before its turn (it expired); false if it was not waiting. */
  remove(job: J): boolean {
    const jobs = this.waiting.get(job.owner);
    const at = jobs ? jobs.indexOf(job) : -1;
    if (!jobs || at < 0) return false;
    jobs.splice(at, 1);
    if (jobs.length === 0) this.waiting.delete(job.owner);
    this.count -= 1;
    return true;
  }

  /** The next job to start, counted as running for its owner until `finished`; undefined if none may. */
  take(): J | undefined {
    for (const [owner, jobs] of this.waiting) {
      const running = this.running.get(owner) ?? 0;
      if (running >= this.perOwner) continue;
      const job = jobs.shift() as J;
      this.waiting.delete(owner);
      if (jobs.length > 0) this.waiting.set(owner, jobs);
      this.running.set(owner, running + 1);
      this.count -= 1;
      return job;
    }
    return undefined;
  }

  /** A job `take` gave out is done. */
  finished(owner: string): void {
    const running = (this.running.get(owner) ?? 0) - 1;
    if (running > 0) this.running.set(owner, running);
    else this.running.delete(owner);
  }

  /** Empties the line; returns what was waiting. */
  clear(): J[] {
    const all = [...this.waiting.values()].flat();
    this.waiting.clear();
    this.count = 0;
    return all;
  }
}

interface Waiter {
  owner: string;
  start: () => void;
  fail: (error: Error) => void;
  timer: NodeJS.Timeout | undefined;
}

/**
 * At most `slots` tasks at once, at most `perOwner` of them of one owner, the others waiting in a
 * `FairQueue`. A task that has not started by its deadline fails with the error `expired` gives, without
 * running. A slot is held until the task's promise settles.
 */
export class FairSlots {
  private running = 0;
  private readonly queue: FairQueue<Waiter>;

  constructor(
    readonly slots: number,
    perOwner: number,
  ) {
    this.queue = new FairQueue(perOwner);
  }

  /** Tasks waiting for a slot. */
  get waiting(): number {
    return this.queue.size;
  }

  run<T>(
    owner: string,
    deadline: number | undefined,
    expired: () => Error,
    task: () => Promise<T>,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const waiter: Waiter = {
        owner,
        timer: undefined,
        fail: reject,
        start: () => {
          if (waiter.timer) clearTimeout(waiter.timer);
          this.running += 1;
          let result: Promise<T>;
          try {
            result = task();
          } catch (error) {
            result = Promise.reject(error);
          }
          result.then(resolve, reject).finally(() => {
            this.running -= 1;
            this.queue.finished(owner);
            this.pump();
          });
        },
      };
      if (deadline !== undefined) {
        waiter.timer = setTimeout(
          () => {
            if (this.queue.remove(waiter)) reject(expired());
          },
          Math.max(0, deadline - Date.now()),
        );
        // A task waits only while another runs, and that one keeps the process alive if it must.
        waiter.timer.unref();
      }
      this.queue.push(waiter);
      this.pump();
    });
  }

  /** Fails every task still waiting (the store is closing). */
  cancelWaiting(error: Error): void {
    for (const waiter of this.queue.clear()) {
      if (waiter.timer) clearTimeout(waiter.timer);
      waiter.fail(error);
    }
  }

  private pump(): void {
    while (this.running < this.slots) {
      const next = this.queue.take();
      if (!next) return;
      next.start();
    }
  }
}
