import type { AccountSummary } from '../billing/billing.js';
import type { Config } from '../config/index.js';
import { nanoToUsd } from '../money/money.js';
import { remaining, windowEnd } from '../store/key-window-rules.js';
import type { ApiKeyInfo } from '../store/types.js';

/** `GET /api/v1/key`: what a client may know about its own key and balance (amounts in USD). */
export interface KeyInfoBody {
  object: 'api_key';
  id: string;
  name: string;
  hint: string;
  /** Unix seconds. */
  created_at: number;
  last_used_at: number | null;
  /** Available balance (open holds already deducted), as `meta.balance` reports it. */
  balance: number;
  /** Money held by requests in flight right now. */
  held: number;
  /** Charges since 00:00 UTC today and since the 1st of this month (UTC). */
  spend: { today: number; month: number };
  /** Per-key limits in force; null = none. */
  limits: {
    requests_per_minute: number | null;
    concurrent_requests: number | null;
    tokens_per_minute: number | null;
  };
  /** The key's spend limit: amount, what is left in the window, reset period and when it resets (Unix s). */
  limit: { amount: number; remaining: number; reset: string; resets_at: number | null } | null;
  /** When the key stops working (Unix seconds); null: never. */
  expires_at: number | null;
  /** The provider and model names the key may use; null: every one. */
  allowed: string[] | null;
}

const seconds = (ms: number | null) => (ms === null ? null : Math.floor(ms / 1000));

export function keyInfoBody(
  key: ApiKeyInfo,
  summary: AccountSummary,
  config: Config,
  now: number = Date.now(),
): KeyInfoBody {
  const { controls } = key;
  const rpms = [config.keyRateLimitRpm, controls.rpm ?? 0].filter((n) => n > 0);
  return {
    object: 'api_key',
    id: key.id,
    name: key.name,
    hint: key.hint,
    created_at: Math.floor(key.createdAt / 1000),
    last_used_at: seconds(key.lastUsedAt),
    balance: nanoToUsd(summary.balanceNano),
    held: nanoToUsd(summary.openHoldsNano),
    spend: { today: nanoToUsd(summary.todayNano), month: nanoToUsd(summary.monthNano) },
    limits: {
      // The stricter of the global and the key's own.
      requests_per_minute: rpms.length > 0 ? Math.min(...rpms) : null,
      concurrent_requests: config.keyMaxConcurrent > 0 ? config.keyMaxConcurrent : null,
      tokens_per_minute: controls.tpm,
    },
    limit:
      controls.limitNano === null
        ? null
        : {
            amount: nanoToUsd(controls.limitNano),
            remaining: nanoToUsd(
              remaining({ limitNano: controls.limitNano, reset: controls.limitReset, ...key.window }, now),
            ),
            reset: controls.limitReset,
            resets_at: seconds(windowEnd(controls.limitReset, now)),
          },
    expires_at: seconds(controls.expiresAt),
    allowed: controls.allowed,
  };
}
