interface Window {
  count: number;
  endsAt: number;
}

export type AttemptCheck = { ok: true } | { ok: false; retryAfterMs: number };

/**
 * Counts events per key in fixed windows, in memory: once a key has `max` events in its window, it is
 * refused until the window ends. Bounded: past `maxKeys` the oldest window is dropped.
 *
 * `take` checks and counts in one synchronous step, so callers that count an attempt before the work it
 * guards (a password verification) admit at most `max` per window however many arrive at once.
 */
export class AttemptLimiter {
  private readonly windows = new Map<string, Window>();

  constructor(
    private readonly max: number,
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
    private readonly maxKeys = 100_000,
  ) {}

  /** Counts one event of `key` unless it already has `max` in its window (then nothing is counted). */
  take(key: string): AttemptCheck {
    const w = this.live(key);
    if (w && w.count >= this.max) return { ok: false, retryAfterMs: w.endsAt - this.now() };
    if (w) {
      w.count += 1;
      return { ok: true };
    }
    if (this.windows.size >= this.maxKeys) {
      const oldest = this.windows.keys().next();
      if (!oldest.done) this.windows.delete(oldest.value);
    }
    this.windows.set(key, { count: 1, endsAt: this.now() + this.windowMs });
    return { ok: true };
  }

  /** Takes back one event `take` counted (an attempt that turned out not to be a failure). */
  undo(key: string): void {
    const w = this.live(key);
    if (!w) return;
    w.count -= 1;
    if (w.count <= 0) this.windows.delete(key);
  }

  reset(key: string): void {
    this.windows.delete(key);
  }

  private live(key: string): Window | undefined {
    const w = this.windows.get(key);
    if (w && w.endsAt <= this.now()) {
      this.windows.delete(key);
      return undefined;
    }
    return w;
  }
}
