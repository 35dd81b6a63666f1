import type { ProviderConfig } from './types.js';

/** `base` without its trailing slashes, followed by `path` (which starts with `/`). */
export function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, '')}${path}`;
}

/**
 * What an adapter sends on every call to one provider (its URL, its headers), made on the provider's first
 * call and kept with its configuration: joining the URL (a regular expression), building the key's header
 * and hashing the new URL string for the client's target cache cost more than the rest of building a small
 * request. The headers are frozen: every call shares the object.
 */
export function perProvider<T>(make: (provider: ProviderConfig) => T): (provider: ProviderConfig) => T {
  const made = new WeakMap<ProviderConfig, T>();
  return (provider) => {
    let value = made.get(provider);
    if (value === undefined) {
      value = make(provider);
      made.set(provider, value);
    }
    return value;
  };
}
