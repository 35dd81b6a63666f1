import type { KeyAuthRecord } from '../store/types.js';

interface Entry {
  record: KeyAuthRecord | undefined;
  expiresAt: number;
}

/** When a lookup began, so its answer can be cached only if nothing was invalidated meanwhile. */
export interface LookupStart {
  generation: number;
  at: number;
}

/**
 * A small bounded cache of key lookups by hash. Entries live at most `ttlMs` (≤ 1 s) counted from when
 * their database read began, which bounds how long a key revoked elsewhere (another process, the CLI)
 * can still be accepted here; with Redis, revocations also drop entries at once on every instance.
 * Unknown keys are cached too, so a flood of bad keys does not become a flood of database reads.
 */
export class KeyCache {
  private readonly entries = new Map<string, Entry>();
  /** Bumped by every invalidation: a read that began before one may have seen the old record. */
  private generation = 0;

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

  /** Call before reading the database; pass the result to `set`. */
  lookupStart(): LookupStart {
    return { generation: this.generation, at: this.now() };
  }

  set(hash: string, record: KeyAuthRecord | undefined, lookup?: LookupStart): void {
    if (this.ttlMs <= 0) return;
    // An invalidation arrived while this record was being read: it may predate the change.
    if (lookup && lookup.generation !== this.generation) return;
    if (this.entries.size >= this.maxEntries) {
      // Drop the oldest insertion (Map iterates in insertion order).
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    this.entries.set(hash, { record, expiresAt: (lookup?.at ?? this.now()) + this.ttlMs });
  }

  delete(hash: string): void {
    this.generation++;
    this.entries.delete(hash);
  }

  /** Drops every entry of one account (e.g. after it was disabled). */
  deleteAccount(accountId: string): void {
    this.generation++;
    for (const [hash, entry] of this.entries) {
      if (entry.record?.accountId === accountId) this.entries.delete(hash);
    }
  }

  /** Drops the entry of one key by its id (e.g. revoked through another instance). */
  deleteKey(keyId: string): void {
    this.generation++;
    for (const [hash, entry] of this.entries) {
      if (entry.record?.keyId === keyId) this.entries.delete(hash);
    }
  }

  /** Drops everything (e.g. after missing invalidations while Redis was unreachable). */
  clear(): void {
    this.generation++;
    this.entries.clear();
  }
}
