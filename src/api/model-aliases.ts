import type { ModelAlias } from '../config/index.js';
import type { ChatRequest } from '../gateway/types.js';
import type { ProviderName } from '../providers/types.js';

/** The provider an alias (`MODEL_ALIASES`) sends `model` to (first match wins), or undefined. */
export function aliasOf(model: string, aliases: readonly ModelAlias[]): ProviderName | undefined {
  for (const { pattern, provider } of aliases) {
    if (pattern.endsWith('*') ? model.startsWith(pattern.slice(0, -1)) : model === pattern) return provider;
  }
  return undefined;
}

/**
 * A request whose model name an alias maps goes to that alias's provider (the name itself is not sent
 * on: the provider's own model serves). Returns that provider, or undefined when no alias matched.
 */
export function applyAlias(chat: ChatRequest, aliases: readonly ModelAlias[]): ProviderName | undefined {
  if (chat.model === undefined) return undefined;
  const provider = aliasOf(chat.model, aliases);
  if (provider !== undefined) {
    chat.provider = provider;
    chat.model = undefined;
  }
  return provider;
}
