import type { KeyAuthRecord } from '../store/types.js';

interface Entry {
  record: KeyAuthRecord | undefined;
  expiresAt: number;
}

/**
 * A small bounded cache of key lookups by hash. Entries live at most `ttlMs` (≤ 1 s), which bounds how
 * long a key revoked elsewhere (another process, the CLI) can still be accepted here. Unknown keys are
 * cached too, so a flood of bad keys does not become a flood of database reads.
 */
export class KeyCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 50_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** `undefined` on a miss; `{ record }` on a hit (record may be undefined: a cached unknown key). */
  get(hash: string): { record: KeyAuthRecord | undefined } | undefined {
    const entry = this.entries.get(hash);
    if (!entry) return undefined;
    if (entry.expiresAt <= this.now()) {
      this.entries.delete(hash);
      return undefined;
    }
    return { record: entry.record };
  }

  set(hash: string, record: KeyAuthRecord | undefined): void {
    if (this.ttlMs <= 0) return;
    if (this.entries.size >= this.maxEntries) {
      // Drop the oldest insertion (Map iterates in insertion order).
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    this.entries.set(hash, { record, expiresAt: this.now() + this.ttlMs });
  }

  delete(hash: string): void {
    this.entries.delete(hash);
  }

  /** Drops every entry of one account (e.g. after it was disabled). */
  deleteAccount(accountId: string): void {
    for (const [hash, entry] of this.entries) {
      if (entry.record?.accountId === accountId) this.entries.delete(hash);
    }
  }
}
