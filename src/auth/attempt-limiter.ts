interface Window {
  count: number;
  endsAt: number;
}

export type AttemptCheck = { ok: true } | { ok: false; retryAfterMs: number };

/**
 * Counts events per key in fixed windows, in memory: once a key has `max` events in its window, it is
 * refused until the window ends. Bounded: past `maxKeys` the oldest window is dropped.
 */
export class AttemptLimiter {
  private readonly windows = new Map<string, Window>();

  constructor(
    private readonly max: number,
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
    private readonly maxKeys = 100_000,
  ) {}

  check(key: string): AttemptCheck {
    const w = this.live(key);
    if (!w || w.count < this.max) return { ok: true };
    return { ok: false, retryAfterMs: w.endsAt - this.now() };
  }

  /** Records one event (e.g. a failed login). */
  hit(key: string): void {
    const w = this.live(key);
    if (w) {
      w.count += 1;
      return;
    }
    if (this.windows.size >= this.maxKeys) {
      const oldest = this.windows.keys().next();
      if (!oldest.done) this.windows.delete(oldest.value);
    }
    this.windows.set(key, { count: 1, endsAt: this.now() + this.windowMs });
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
