import { hash, randomBytes } from 'node:crypto';

/** An API key is the prefix "sk-svc-" followed by 32 hexadecimal characters (docs/api.md). */
export const KEY_PREFIX = 'sk-svc-';
const KEY_PATTERN = /^sk-svc-[0-9a-fA-F]{32}$/;

export function isWellFormedKey(token: string): boolean {
  return KEY_PATTERN.test(token);
}

/** A new key: the prefix and 32 lower-case hex characters from the CSPRNG (128 bits). */
export function generateApiKey(): string {
  return KEY_PREFIX + randomBytes(16).toString('hex');
}

/**
 * SHA-256 (hex) of a well-formed key with its hex part lower-cased: the only form a key is stored in.
 * A 128-bit random secret needs no slow hash; a fast one keeps the lookup on the hot path cheap.
 */
export function hashApiKey(key: string): string {
  // crypto.hash: one call, no Hash object per request (Node 20.12+).
  return hash('sha256', key.toLowerCase(), 'hex');
}

/** Display hint shown in listings: `sk-svc-1a2b…9f0e`. */
export function keyHint(key: string): string {
  const hex = key.slice(KEY_PREFIX.length).toLowerCase();
  return `${KEY_PREFIX}${hex.slice(0, 4)}…${hex.slice(-4)}`;
}
