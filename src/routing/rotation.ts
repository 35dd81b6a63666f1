/**
 * Source of the auto-rotation sequence: this process's own counter, or one shared by every instance over
 * Redis (`src/cluster/shared-rotation.ts`).
 */
export interface RotationCounter {
  /** Resolves to 0, 1, 2, … — one number per auto-routed request. */
  next(): Promise<number>;
}

export class LocalRotationCounter implements RotationCounter {
  private value = 0;
  async next(): Promise<number> {
    const v = this.value;
    this.value = (this.value + 1) % Number.MAX_SAFE_INTEGER;
    return v;
  }
}
