import type { ApiKeyInfo, Store } from '../store/types.js';
import { generateApiKey, hashApiKey, keyHint } from './api-key.js';

/** At most 10 API keys per account; revoked keys do not count (docs/errors.md, `key_limit_reached`). */
export const MAX_KEYS_PER_ACCOUNT = 10;
export const MAX_KEY_NAME_LENGTH = 100;
/**
 * The key id of the usage rows of the dashboard's playground (its calls are the session's, not a key's):
 * a label, not a key — API key ids are `key_…`, so no key has it.
 */
export const PLAYGROUND_KEY_ID = 'playground';

export type CreateKeyResult =
  | { ok: true; key: ApiKeyInfo; secret: string }
  | { ok: false; reason: 'limit_reached' | 'invalid_name'; message: string };

/**
 * Creates an API key for an account. The plaintext key exists only in the returned `secret`; the store
 * keeps its SHA-256 and a display hint.
 */
export async function createKey(store: Store, accountId: string, name: string): Promise<CreateKeyResult> {
  const trimmed = name.trim();
  if (trimmed.length === 0 || trimmed.length > MAX_KEY_NAME_LENGTH) {
    return {
      ok: false,
      reason: 'invalid_name',
      message: `A key needs a descriptive name of 1 to ${MAX_KEY_NAME_LENGTH} characters.`,
    };
  }
  const secret = generateApiKey();
  const result = await store.createApiKey({
    accountId,
    name: trimmed,
    keyHash: hashApiKey(secret),
    hint: keyHint(secret),
    maxActive: MAX_KEYS_PER_ACCOUNT,
  });
  if (!result.ok) {
    return {
      ok: false,
      reason: 'limit_reached',
      message: `An account can have at most ${MAX_KEYS_PER_ACCOUNT} API keys; revoke one before creating another.`,
    };
  }
  return { ok: true, key: result.key, secret };
}
