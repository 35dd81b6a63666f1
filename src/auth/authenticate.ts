import { GatewayError } from '../errors.js';
import type { ApiKeyInfo, KeyAuthRecord, KeyControls, Store } from '../store/types.js';
import { hashApiKey, isWellFormedKey } from './api-key.js';
import type { KeyCache } from './key-cache.js';

/**
 * Tells the other instances about key and account changes (over Redis), so they drop cached records at
 * once. Carries key ids, key hashes and account ids, never a key.
 */
export interface KeyChangeBroadcast {
  keyRevoked(key: { keyId: string } | { keyHash: string }): void;
  accountChanged(accountId: string): void;
}

/** Who is calling: the result of a successful authentication. */
export interface AuthContext {
  keyId: string;
  keyName: string;
  accountId: string;
  /** The key's own controls (docs/api.md "Key controls"); undefined: none. */
  controls?: KeyControls;
}

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;
const TOUCH_INTERVAL_MS = 60_000;

/**
 * Bearer token → key record → account (docs/errors.md). No header, an empty one, or one
 * not of the form `Bearer <token>` → 401 missing_api_key; a token that is not an active key (wrong
 * format, unknown, revoked, disabled account) → 401 invalid_api_key "Invalid API key".
 */
export class Authenticator {
  private readonly lastTouched = new Map<string, number>();

  constructor(
    private readonly store: Store,
    private readonly cache: KeyCache,
    private readonly now: () => number = Date.now,
    private readonly broadcast?: KeyChangeBroadcast,
  ) {}

  /** The record of an authenticated key (for `GET /api/v1/key`). */
  keyInfo(auth: AuthContext): Promise<ApiKeyInfo | undefined> {
    return this.store.getApiKey(auth.accountId, auth.keyId);
  }

  /** The caller of an `Authorization` header; the key's record comes from the cache, else the store. */
  async authenticate(header: string | undefined): Promise<AuthContext> {
    const match = header === undefined ? null : BEARER.exec(header);
    if (!match?.[1]) {
      throw new GatewayError(
        'missing_api_key',
        'Missing API key. Send it as "Authorization: Bearer sk-svc-…"; keys are created in the dashboard.',
      );
    }
    const token = match[1];
    if (!isWellFormedKey(token)) throw invalidKey();
    const hash = hashApiKey(token);
    const cached = this.cache.get(hash);
    if (cached) return this.admit(cached.record);
    const lookup = this.cache.lookupStart();
    const record = await this.store.findKeyByHash(hash);
    this.cache.set(hash, record, lookup);
    return this.admit(record);
  }

  private admit(record: KeyAuthRecord | undefined): AuthContext {
    if (!record || record.revoked || record.accountStatus !== 'active') throw invalidKey();
    const expiresAt = record.controls?.expiresAt ?? null;
    if (expiresAt !== null && this.now() >= expiresAt) {
      throw new GatewayError('key_expired', `This API key expired at ${new Date(expiresAt).toISOString()}.`);
    }
    this.touch(record.keyId);
    const auth: AuthContext = { keyId: record.keyId, keyName: record.keyName, accountId: record.accountId };
    if (record.controls) auth.controls = record.controls;
    return auth;
  }

  /** Forget a key at once here and on every instance (used right after revoking it). */
  forget(keyHash: string): void {
    this.cache.delete(keyHash);
    this.broadcast?.keyRevoked({ keyHash });
  }

  /** Forget every key of an account at once here and on every instance (used right after disabling it). */
  forgetAccount(accountId: string): void {
    this.cache.deleteAccount(accountId);
    this.broadcast?.accountChanged(accountId);
  }

  /** Forget a revoked key, by its id, at once here and on every instance (used right after revoking it). */
  keyRevoked(keyId: string): void {
    this.cache.deleteKey(keyId);
    this.broadcast?.keyRevoked({ keyId });
  }

  /** Applies a change another instance announced (no re-broadcast). */
  applyRemoteChange(change: { keyId: string } | { keyHash: string } | { accountId: string }): void {
    if ('keyId' in change) this.cache.deleteKey(change.keyId);
    else if ('keyHash' in change) this.cache.delete(change.keyHash);
    else this.cache.deleteAccount(change.accountId);
  }

  /** Drops the whole cache (announcements may have been missed while Redis was unreachable). */
  forgetAll(): void {
    this.cache.clear();
  }

  /** Records "last used", at most once a minute per key, off the request's critical path. */
  private touch(keyId: string): void {
    const now = this.now();
    const last = this.lastTouched.get(keyId);
    if (last !== undefined && now - last < TOUCH_INTERVAL_MS) return;
    this.lastTouched.set(keyId, now);
    if (this.lastTouched.size > 100_000) this.lastTouched.clear();
    this.store.touchApiKey(keyId, now).catch(() => {
      // Best effort: a missed "last used" stamp must never fail a request.
    });
  }
}

function invalidKey(): GatewayError {
  return new GatewayError('invalid_api_key', 'Invalid API key');
}
