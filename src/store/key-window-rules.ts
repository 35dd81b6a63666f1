/**
 * The money rules of a key's spend limit, as pure functions (integer nanodollars, epoch milliseconds).
 * A key may have a limit of `limitNano` per window; the window is a UTC day, a week from Monday 00:00 UTC, a
 * month from the 1st 00:00 UTC, or one window for ever (`never`). The key's row keeps the start of the
 * window it counts (`windowStart`), what that window was charged (`spentNano`) and what calls in flight
 * hold against it (`heldNano`).
 *
 * A window is rolled over by the first hold whose time falls in a later window: there is no cron and no gap,
 * and a hold can never bring back an earlier window (an instance whose clock is behind counts in the row's
 * window). A hold records the window it was counted in; its settle or release changes the key's figures only
 * while the row still counts that window — a charge always counts in its hold's window, never in the next.
 *
 * Both stores apply these functions: SQLite in its transaction (sqlite/ledger.ts), PostgreSQL under the key
 * row's lock (postgres/key-limit.ts). test/store/key-window-rules.test.ts holds them to their properties.
 */

import type { LimitReset } from './types.js';

export type { LimitReset } from './types.js';

export const LIMIT_RESETS: readonly LimitReset[] = ['daily', 'weekly', 'monthly', 'never'];

export function isLimitReset(value: unknown): value is LimitReset {
  return typeof value === 'string' && (LIMIT_RESETS as readonly string[]).includes(value);
}

const DAY_MS = 86_400_000;
/** 1970-01-01 was a Thursday: the first Monday 00:00 UTC is 4 days later. */
const FIRST_MONDAY_MS = 4 * DAY_MS;
const WEEK_MS = 7 * DAY_MS;

/** The start of the window `at` falls in (0 for `never`: one window for ever). */
export function windowStart(reset: LimitReset, at: number): number {
  switch (reset) {
    case 'daily':
      return Math.floor(at / DAY_MS) * DAY_MS;
    case 'weekly':
      return Math.floor((at - FIRST_MONDAY_MS) / WEEK_MS) * WEEK_MS + FIRST_MONDAY_MS;
    case 'monthly': {
      const d = new Date(at);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
    }
    case 'never':
      return 0;
  }
}

/** When the window `at` falls in ends (the next reset); null for `never`. */
export function windowEnd(reset: LimitReset, at: number): number | null {
  switch (reset) {
    case 'daily':
      return windowStart(reset, at) + DAY_MS;
    case 'weekly':
      return windowStart(reset, at) + WEEK_MS;
    case 'monthly': {
      const d = new Date(at);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
    }
    case 'never':
      return null;
  }
}

/** A key's limit and the figures of the window its row counts. */
export interface KeyWindow {
  limitNano: number;
  reset: LimitReset;
  windowStart: number;
  spentNano: number;
  heldNano: number;
}

/** The figures as of `at`: the row's own, or a fresh window when `at` falls in a later one. */
export function currentWindow(key: KeyWindow, at: number): KeyWindow {
  const start = windowStart(key.reset, at);
  if (start <= key.windowStart) return key;
  return { ...key, windowStart: start, spentNano: 0, heldNano: 0 };
}

/** What the key may still hold or be charged at `at` (never below 0). */
export function remaining(key: KeyWindow, at: number): number {
  const w = currentWindow(key, at);
  return Math.max(0, w.limitNano - w.spentNano - w.heldNano);
}

export interface KeyHoldOutcome {
  ok: boolean;
  /** The key's figures after it (when ok), window rolled over as `at` asks; unchanged when refused. */
  next: KeyWindow;
  /** What was left for holds before it, in the window counted. */
  remainingNano: number;
}

/** A hold of `amount` at `at` counts against the key's window, or changes nothing when the limit is short. */
export function keyHold(key: KeyWindow, at: number, amount: number): KeyHoldOutcome {
  const w = currentWindow(key, at);
  const left = Math.max(0, w.limitNano - w.spentNano - w.heldNano);
  if (amount > left) return { ok: false, next: key, remainingNano: left };
  return { ok: true, next: { ...w, heldNano: w.heldNano + amount }, remainingNano: left };
}

/**
 * The most a settle of a hold of `held` counted in `holdWindow` may charge: the hold, and beyond it what the
 * key has left in that window; no bound (Infinity) when the row counts another window now.
 */
export function chargeCap(key: KeyWindow, holdWindow: number, held: number): number {
  if (holdWindow !== key.windowStart) return Number.POSITIVE_INFINITY;
  return held + Math.max(0, key.limitNano - key.spentNano - key.heldNano);
}

/**
 * The settle of a hold of `held` counted in `holdWindow`, which charged `charged`: the hold leaves the
 * window's held figure and the charge joins its spend — only while the row counts that window.
 */
export function keySettle(key: KeyWindow, holdWindow: number, held: number, charged: number): KeyWindow {
  if (holdWindow !== key.windowStart) return key;
  return {
    ...key,
    heldNano: Math.max(0, key.heldNano - held),
    spentNano: key.spentNano + charged,
  };
}

/** A release: the hold leaves the window's held figure (only while the row counts the hold's window). */
export function keyRelease(key: KeyWindow, holdWindow: number, held: number): KeyWindow {
  return keySettle(key, holdWindow, held, 0);
}

/** What a refusal says of the key's limit at `at`: the limit, what is left, when the window resets. */
export function limitRefusal(
  key: KeyWindow,
  at: number,
): { limitNano: number; remainingNano: number; resetsAt: number | null } {
  const w = currentWindow(key, at);
  return {
    limitNano: key.limitNano,
    remainingNano: remaining(key, at),
    resetsAt: key.reset === 'never' ? null : windowEnd(key.reset, Math.max(at, w.windowStart)),
  };
}

/** A key row's limit columns, as both stores read them: [limit, reset, window start, spent, held]. */
export type KeyWindowRow = [
  number | string | bigint,
  string,
  number | string | bigint,
  number | string | bigint,
  number | string | bigint,
];

/** The row's figures (a reset the rules do not know counts as `never`). */
export function keyWindowOf(row: KeyWindowRow): KeyWindow {
  return {
    limitNano: Number(row[0]),
    reset: isLimitReset(row[1]) ? row[1] : 'never',
    windowStart: Number(row[2]),
    spentNano: Number(row[3]),
    heldNano: Number(row[4]),
  };
}
