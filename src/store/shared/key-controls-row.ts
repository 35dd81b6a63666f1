import { isLimitReset, windowStart } from '../key-window-rules.js';
import { type ApiKeysTable, toNumber, toNumberOrNull } from '../schema.js';
import type { KeyChanges, KeyControls, KeyWindowFigures } from '../types.js';

/** A key row's control columns (migration 0012), as either database returns them. */
export type ControlColumns = Pick<
  ApiKeysTable,
  | 'limit_nano'
  | 'limit_reset'
  | 'window_start'
  | 'window_spent_nano'
  | 'window_held_nano'
  | 'expires_at'
  | 'allowed'
  | 'rpm'
  | 'tpm'
>;

export const CONTROL_COLUMNS = [
  'limit_nano',
  'limit_reset',
  'window_start',
  'window_spent_nano',
  'window_held_nano',
  'expires_at',
  'allowed',
  'rpm',
  'tpm',
] as const;

function allowedOf(text: string | null | undefined): string[] | null {
  if (text === null || text === undefined) return null;
  const parsed: unknown = JSON.parse(text);
  return Array.isArray(parsed) ? parsed.filter((x): x is string => typeof x === 'string') : null;
}

/** A key's controls from its row (a row before migration 0012 has none). */
export function controlsOf(row: Partial<ControlColumns>): KeyControls {
  return {
    limitNano: toNumberOrNull(row.limit_nano ?? null),
    limitReset: isLimitReset(row.limit_reset) ? row.limit_reset : 'never',
    expiresAt: toNumberOrNull(row.expires_at ?? null),
    allowed: allowedOf(row.allowed),
    rpm: row.rpm ?? null,
    tpm: row.tpm ?? null,
  };
}

export function windowOf(row: Partial<ControlColumns>): KeyWindowFigures {
  return {
    windowStart: toNumber(row.window_start ?? 0),
    spentNano: toNumber(row.window_spent_nano ?? 0),
    heldNano: toNumber(row.window_held_nano ?? 0),
  };
}

/** The columns `changes` sets, apart from the window's figures (which `windowFill` computes). */
export function controlValues(changes: KeyChanges): Partial<ApiKeysTable> {
  const v: Partial<ApiKeysTable> = {};
  if (changes.name !== undefined) v.name = changes.name;
  if (changes.limitNano !== undefined) v.limit_nano = changes.limitNano;
  if (changes.limitReset !== undefined) v.limit_reset = changes.limitReset;
  if (changes.expiresAt !== undefined) v.expires_at = changes.expiresAt;
  if (changes.allowed !== undefined)
    v.allowed = changes.allowed === null ? null : JSON.stringify(changes.allowed);
  if (changes.rpm !== undefined) v.rpm = changes.rpm;
  if (changes.tpm !== undefined) v.tpm = changes.tpm;
  return v;
}

/** Whether `changes` (re)starts the count of the limit's window. */
export function restartsWindow(changes: KeyChanges): boolean {
  return changes.limitNano !== undefined || changes.limitReset !== undefined;
}

/** The window a limit set at `now` counts. */
export function windowAt(reset: KeyControls['limitReset'], now: number): number {
  return windowStart(reset, now);
}
