/**
 * Counts requests in progress, so the process can shed load past a cap (503 at once instead of an
 * unbounded queue) and so shutdown can wait for every admitted request to be settled.
 */
export class InFlight {
  private count = 0;
  private waiters: (() => void)[] = [];

  constructor(readonly limit: number) {}

  get size(): number {
    return this.count;
  }

  /** Whether the cap is reached (a look only: `tryEnter` takes the slot). */
  get full(): boolean {
    return this.count >= this.limit;
  }

  /** Admits one request unless the cap is reached; the returned function ends it (idempotent). */
  tryEnter(): (() => void) | undefined {
    if (this.count >= this.limit) return undefined;
    this.count++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.count--;
      if (this.count === 0) for (const wake of this.waiters.splice(0)) wake();
    };
  }

  /** Resolves once nothing is in flight. */
  idle(): Promise<void> {
    if (this.count === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}
