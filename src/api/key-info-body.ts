import type { AccountSummary } from '../billing/billing.js';
import type { Config } from '../config/index.js';
import { nanoToUsd } from '../money/money.js';
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
  limits: { requests_per_minute: number | null; concurrent_requests: number | null };
}

const seconds = (ms: number | null) => (ms === null ? null : Math.floor(ms / 1000));

export function keyInfoBody(key: ApiKeyInfo, summary: AccountSummary, config: Config): KeyInfoBody {
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
      requests_per_minute: config.keyRateLimitRpm > 0 ? config.keyRateLimitRpm : null,
      concurrent_requests: config.keyMaxConcurrent > 0 ? config.keyMaxConcurrent : null,
    },
  };
}
