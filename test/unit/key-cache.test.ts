import { describe, expect, it } from 'vitest';
import { KeyCache } from '../../src/auth/key-cache.js';
import type { KeyAuthRecord } from '../../src/store/types.js';

const record = (keyId: string, accountId = 'acct_1'): KeyAuthRecord => ({
  keyId,
  keyName: 'k',
  accountId,
  accountStatus: 'active',
  revoked: false,
});

describe('KeyCache', () => {
  it('an entry lives ttl from when its database read began, not from when it was stored', () => {
    let t = 0;
    const cache = new KeyCache(1000, 100, () => t);
    const lookup = cache.lookupStart();
    t = 400; // a slow read
    cache.set('h', record('key_1'), lookup);
    t = 999;
    expect(cache.get('h')?.record?.keyId).toBe('key_1');
    t = 1000;
    expect(cache.get('h')).toBeUndefined();
  });

  it('a read that began before an invalidation is not cached (it may predate the revocation)', () => {
    const cache = new KeyCache(1000);
    const lookup = cache.lookupStart();
    cache.deleteKey('key_1'); // the announcement arrives while the read is in flight
    cache.set('h', record('key_1'), lookup);
    expect(cache.get('h')).toBeUndefined();
    const fresh = cache.lookupStart();
    cache.set('h', record('key_1'), fresh);
    expect(cache.get('h')).toBeDefined();
  });

  it('drops entries by key id, by account, or all at once', () => {
    const cache = new KeyCache(1000);
    cache.set('h1', record('key_1', 'acct_a'));
    cache.set('h2', record('key_2', 'acct_a'));
    cache.set('h3', record('key_3', 'acct_b'));
    cache.deleteKey('key_1');
    expect(cache.get('h1')).toBeUndefined();
    expect(cache.get('h2')).toBeDefined();
    cache.deleteAccount('acct_a');
    expect(cache.get('h2')).toBeUndefined();
    expect(cache.get('h3')).toBeDefined();
    cache.clear();
    expect(cache.get('h3')).toBeUndefined();
  });
});
