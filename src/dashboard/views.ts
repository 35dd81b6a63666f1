import { PLAYGROUND_KEY_ID } from '../auth/keys.js';
import { nanoToUsd } from '../money/money.js';
import type { ProviderStatus } from '../routing/registry.js';
import type {
  AuditEntry,
  CreditEntry,
  InviteRecord,
  KeyWithSpend,
  ProviderTraffic,
  UsageRow,
} from '../store/dashboard-types.js';
import type { Account, ApiKeyInfo } from '../store/types.js';

/**
 * The dashboard API's JSON shapes: snake_case, times as ISO 8601 strings, money as dollars (JSON
 * numbers, converted from integer nanodollars only here, at the edge). Nothing secret is ever in them:
 * no password hash, no key hash, no session id.
 */

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function isoOrNull(ms: number | null): string | null {
  return ms === null ? null : iso(ms);
}

export function accountView(a: Account) {
  return {
    id: a.id,
    email: a.email,
    role: a.role,
    status: a.status,
    balance: nanoToUsd(a.balanceNano),
    created_at: iso(a.createdAt),
  };
}

export function keyView(k: KeyWithSpend | (ApiKeyInfo & { spendNano?: number; requests?: number })) {
  return {
    id: k.id,
    name: k.name,
    hint: k.hint,
    status: k.revokedAt === null ? 'active' : 'revoked',
    created_at: iso(k.createdAt),
    last_used_at: isoOrNull(k.lastUsedAt),
    revoked_at: isoOrNull(k.revokedAt),
    spend: nanoToUsd(k.spendNano ?? 0),
    requests: k.requests ?? 0,
  };
}

export function usageView(u: UsageRow) {
  return {
    request_id: u.requestId,
    created_at: iso(u.createdAt),
    key:
      u.keyId === PLAYGROUND_KEY_ID
        ? { id: u.keyId, name: 'Playground', hint: null }
        : { id: u.keyId, name: u.keyName, hint: u.keyHint },
    provider: u.provider,
    model: u.model,
    prompt_tokens: u.promptTokens,
    cache_read_tokens: u.cacheReadTokens,
    cache_write_tokens: u.cacheWriteTokens,
    completion_tokens: u.completionTokens,
    total_tokens: u.promptTokens + u.completionTokens,
    usage_estimated: u.usageEstimated,
    cost: nanoToUsd(u.costNano),
    duration_ms: u.durationMs,
    status: u.status,
    error_code: u.errorCode,
    http_status: u.httpStatus,
    client_gone: u.clientGone,
    // 1, or for a row of refused requests (402 before any hold) how many one key had in that minute.
    requests: u.requests,
  };
}

export function creditView(c: CreditEntry) {
  return {
    id: c.id,
    amount: nanoToUsd(c.amountNano),
    note: c.note,
    batch_id: c.batchId,
    created_at: iso(c.createdAt),
  };
}

/** An invite; `usedByEmail`: the email of the account that signed up with it, where the route looked it up. */
export function inviteView(i: InviteRecord, now: number, usedByEmail: string | null = null) {
  const status =
    i.usedAt !== null ? 'used' : i.revokedAt !== null ? 'revoked' : i.expiresAt <= now ? 'expired' : 'open';
  return {
    id: i.id,
    email: i.email,
    note: i.note,
    status,
    created_at: iso(i.createdAt),
    expires_at: iso(i.expiresAt),
    used_at: isoOrNull(i.usedAt),
    used_by: i.usedBy,
    used_by_email: usedByEmail,
  };
}

export function providerView(s: ProviderStatus, traffic: ProviderTraffic | undefined) {
  const requests = traffic?.requests ?? 0;
  const errors = traffic?.errors ?? 0;
  return {
    name: s.provider.name,
    model: s.provider.model,
    wire_format: s.provider.wireFormat,
    in_auto_rotation: s.provider.inAutoRotation,
    active: s.active,
    inactive_reason: s.inactiveReason ?? null,
    circuit: s.circuit,
    input_price: nanoToUsd(s.provider.inputPriceNano),
    output_price: nanoToUsd(s.provider.outputPriceNano),
    requests_last_hour: requests,
    errors_last_hour: errors,
    error_rate: requests === 0 ? null : errors / requests,
  };
}

export function auditView(e: AuditEntry) {
  return {
    id: e.id,
    at: iso(e.at),
    actor: e.actor,
    actor_id: e.actorId,
    action: e.action,
    account_id: e.accountId,
    target_id: e.targetId,
    detail: e.detail,
  };
}
