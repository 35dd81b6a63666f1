import type { FastifyInstance } from 'fastify';
import { MAX_KEY_NAME_LENGTH } from '../auth/keys.js';
import { GatewayError } from '../errors.js';
import { nanoToUsd, parseUsdToNano } from '../money/money.js';
import { isAllowed } from '../routing/key-allow.js';
import type { ProviderStatus } from '../routing/registry.js';
import { currentWindow, isLimitReset, remaining, windowEnd } from '../store/key-window-rules.js';
import type { ApiKeyInfo, KeyChanges } from '../store/types.js';
import { type Fields, fieldsOf } from './body.js';
import { type DashboardDeps, sessionOf } from './deps.js';

const ID = /^[A-Za-z0-9_]{1,64}$/;
const FIELDS = ['name', 'limit', 'limit_reset', 'expires_at', 'allowed', 'rpm', 'tpm'] as const;
const MAX_ALLOWED = 64;

function invalid(param: string, message: string): GatewayError {
  return new GatewayError('invalid_request', message, { param });
}

function keyNotFound(): GatewayError {
  return new GatewayError('not_found', 'No such API key.');
}

/** A key with its controls, as the dashboard's JSON API shows it (amounts in USD, times ISO-8601). */
export function keyControlsView(k: ApiKeyInfo, now: number) {
  const c = k.controls;
  const window = { limitNano: c.limitNano ?? 0, reset: c.limitReset, ...k.window };
  const resetsAt = windowEnd(c.limitReset, now);
  return {
    id: k.id,
    name: k.name,
    limit:
      c.limitNano === null
        ? null
        : {
            amount: nanoToUsd(c.limitNano),
            spent: nanoToUsd(currentWindow(window, now).spentNano),
            remaining: nanoToUsd(remaining(window, now)),
            reset: c.limitReset,
            resets_at: resetsAt === null ? null : new Date(resetsAt).toISOString(),
          },
    expires_at: c.expiresAt === null ? null : new Date(c.expiresAt).toISOString(),
    allowed: c.allowed,
    rpm: c.rpm,
    tpm: c.tpm,
  };
}

/**
 * Every provider and model with its prices (USD per 1M tokens, cache reads and writes too), whether `auto`
 * rotates over it, whether it serves now, and which of the account's active keys may use it.
 */
export function modelPricesView(statuses: readonly ProviderStatus[], keys: readonly ApiKeyInfo[]) {
  const active = keys.filter((k) => k.revokedAt === null);
  return {
    data: statuses.map((s) => {
      const p = s.provider;
      return {
        provider: p.name,
        model: p.model,
        input_price: nanoToUsd(p.inputPriceNano),
        output_price: nanoToUsd(p.outputPriceNano),
        cache_read_price: nanoToUsd(p.cacheReadPriceNano),
        cache_write_price: nanoToUsd(p.cacheWritePriceNano),
        auto: p.inAutoRotation,
        active: s.active,
        key_ids: active.filter((k) => isAllowed(p, k.controls.allowed)).map((k) => k.id),
      };
    }),
    keys: active.map((k) => ({ id: k.id, name: k.name, hint: k.hint, allowed: k.controls.allowed })),
  };
}

/** The changes a PATCH body asks for; `null` clears a control. */
function changesOf(fields: Fields): KeyChanges {
  const changes: KeyChanges = {};
  if (fields.name !== undefined) {
    if (
      typeof fields.name !== 'string' ||
      fields.name.trim() === '' ||
      fields.name.length > MAX_KEY_NAME_LENGTH
    ) {
      throw invalid('name', `"name" must be 1 to ${MAX_KEY_NAME_LENGTH} characters.`);
    }
    changes.name = fields.name;
  }
  if (fields.limit !== undefined) {
    if (fields.limit === null) changes.limitNano = null;
    else {
      const nano =
        typeof fields.limit === 'number' || typeof fields.limit === 'string'
          ? parseUsdToNano(String(fields.limit))
          : undefined;
      if (nano === undefined || nano <= 0)
        throw invalid('limit', '"limit" must be a positive amount in USD, or null.');
      changes.limitNano = nano;
    }
  }
  if (fields.limit_reset !== undefined) {
    if (!isLimitReset(fields.limit_reset)) {
      throw invalid('limit_reset', '"limit_reset" must be "daily", "weekly", "monthly" or "never".');
    }
    changes.limitReset = fields.limit_reset;
  }
  if (fields.expires_at !== undefined) {
    if (fields.expires_at === null) changes.expiresAt = null;
    else {
      const at = typeof fields.expires_at === 'string' ? Date.parse(fields.expires_at) : Number.NaN;
      if (Number.isNaN(at)) throw invalid('expires_at', '"expires_at" must be an ISO-8601 time, or null.');
      changes.expiresAt = at;
    }
  }
  if (fields.allowed !== undefined) {
    if (fields.allowed === null) changes.allowed = null;
    else {
      const list = fields.allowed;
      if (
        !Array.isArray(list) ||
        list.length === 0 ||
        list.length > MAX_ALLOWED ||
        !list.every((x) => typeof x === 'string' && x.length > 0 && x.length <= 200)
      ) {
        throw invalid(
          'allowed',
          `"allowed" must be a list of 1 to ${MAX_ALLOWED} provider or model names, or null.`,
        );
      }
      changes.allowed = list as string[];
    }
  }
  for (const name of ['rpm', 'tpm'] as const) {
    const value = fields[name];
    if (value === undefined) continue;
    if (value === null) changes[name] = null;
    else if (typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= 2_147_483_647) {
      changes[name] = value;
    } else throw invalid(name, `"${name}" must be a positive whole number, or null.`);
  }
  return changes;
}

/**
 * Keys' controls: `GET /keys/controls`, `GET /keys/:id/controls`, `PATCH /keys/:id`; and `GET /models`, the
 * prices and which keys may use each model (docs/dashboard.md).
 */
export async function keyControlRoutes(app: FastifyInstance, deps: DashboardDeps): Promise<void> {
  const { store, dashboardStore, authenticator, providers, now } = deps;

  app.get('/keys/controls', async (request) => {
    const session = sessionOf(request);
    const at = now();
    const keys = await store.listApiKeys(session.accountId);
    return {
      data: keys.filter((k) => k.revokedAt === null).map((k) => keyControlsView(k, at)),
    };
  });

  app.get('/models', async (request) => {
    const session = sessionOf(request);
    return modelPricesView(providers(), await store.listApiKeys(session.accountId));
  });

  app.get<{ Params: { id: string } }>('/keys/:id/controls', async (request) => {
    const session = sessionOf(request);
    if (!ID.test(request.params.id)) throw keyNotFound();
    const key = await store.getApiKey(session.accountId, request.params.id);
    if (!key) throw keyNotFound();
    return keyControlsView(key, now());
  });

  app.patch<{ Params: { id: string } }>('/keys/:id', async (request) => {
    const session = sessionOf(request);
    const { id } = request.params;
    if (!ID.test(id)) throw keyNotFound();
    const changes = changesOf(fieldsOf(request.body, FIELDS));
    const key = await store.updateApiKey(session.accountId, id, changes);
    if (!key) throw keyNotFound();
    // The key's cached record (expiry, allow-list) is dropped here and, over Redis, on every instance.
    const hash = await dashboardStore.keyHash(session.accountId, id);
    if (hash) authenticator.forget(hash);
    request.log.info({ accountId: session.accountId, keyId: id }, 'API key controls changed');
    return keyControlsView(key, now());
  });
}
