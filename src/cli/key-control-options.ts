import { parseUsdToNano } from '../money/money.js';
import { isLimitReset } from '../store/key-window-rules.js';
import type { KeyChanges } from '../store/types.js';
import { usageError } from './cli-error.js';

/** The key-control options of `keys create` and `keys update`, as given (strings). */
export interface KeyControlArgs {
  name?: string | undefined;
  limit?: string | undefined;
  limitReset?: string | undefined;
  expires?: string | undefined;
  allow?: string | undefined;
  rpm?: string | undefined;
  tpm?: string | undefined;
}

/**
 * The changes the options ask for. `none` clears a limit, an expiry or a rate (`all` the allow-list);
 * `clearing` is false for `keys create`, where there is nothing to clear.
 */
export function keyChangesOf(args: KeyControlArgs, clearing: boolean): KeyChanges {
  const changes: KeyChanges = {};
  const cleared = (value: string, word: string) => clearing && value === word;
  if (args.name !== undefined) {
    if (args.name.trim() === '') throw usageError('--name must not be empty');
    changes.name = args.name;
  }
  if (args.limit !== undefined) {
    if (cleared(args.limit, 'none')) changes.limitNano = null;
    else {
      const nano = parseUsdToNano(args.limit);
      if (nano === undefined || nano <= 0)
        throw usageError('--limit must be a positive amount in USD (e.g. 25 or 2.50)');
      changes.limitNano = nano;
    }
  }
  if (args.limitReset !== undefined) {
    if (!isLimitReset(args.limitReset))
      throw usageError('--limit-reset must be daily, weekly, monthly or never');
    changes.limitReset = args.limitReset;
  }
  if (args.expires !== undefined) {
    if (cleared(args.expires, 'none')) changes.expiresAt = null;
    else {
      const at = Date.parse(args.expires);
      if (!/^\d{4}-\d{2}-\d{2}/.test(args.expires) || Number.isNaN(at)) {
        throw usageError('--expires must be an ISO-8601 time (e.g. 2026-01-31T00:00:00Z)');
      }
      changes.expiresAt = at;
    }
  }
  if (args.allow !== undefined) {
    if (cleared(args.allow, 'all')) changes.allowed = null;
    else {
      const names = args.allow
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '');
      if (names.length === 0) throw usageError('--allow must list provider or model names, comma-separated');
      changes.allowed = names;
    }
  }
  for (const [option, value] of [
    ['rpm', args.rpm],
    ['tpm', args.tpm],
  ] as const) {
    if (value === undefined) continue;
    if (cleared(value, 'none')) changes[option] = null;
    else if (/^[1-9]\d{0,9}$/.test(value) && Number(value) <= 2_147_483_647) changes[option] = Number(value);
    else throw usageError(`--${option} must be a positive whole number${clearing ? ' or none' : ''}`);
  }
  return changes;
}
