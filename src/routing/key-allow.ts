import { GatewayError } from '../errors.js';
import type { ProviderConfig } from '../providers/types.js';

/**
 * A key's allow-list (docs/api.md "Key controls"): the provider and model names it may use; null or
 * undefined: every one. A provider is allowed when the list names it or the model it serves.
 */
export type AllowList = readonly string[] | null | undefined;

export function isAllowed(provider: Pick<ProviderConfig, 'name' | 'model'>, allowed: AllowList): boolean {
  return !allowed || allowed.includes(provider.name) || allowed.includes(provider.model);
}

/** 403 model_not_allowed, naming what the key may use. */
export function notAllowed(allowed: readonly string[], what: string): GatewayError {
  return new GatewayError(
    'model_not_allowed',
    `This API key may not use ${what}. It may use: ${allowed.join(', ')}.`,
    { param: 'model' },
  );
}
