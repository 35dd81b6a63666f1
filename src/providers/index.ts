import { anthropicAdapter } from './anthropic/index.js';
import { geminiAdapter } from './gemini/index.js';
import { openaiCompatibleAdapter } from './openai-compatible/index.js';
import type { ProviderAdapter, WireFormat } from './types.js';

const ADAPTERS: Readonly<Record<WireFormat, ProviderAdapter>> = Object.freeze({
  'openai-compatible': openaiCompatibleAdapter,
  anthropic: anthropicAdapter,
  gemini: geminiAdapter,
});

/** The adapter that speaks `format`. Every wire format has exactly one. */
export function adapterFor(format: WireFormat): ProviderAdapter {
  return ADAPTERS[format];
}

export { anthropicAdapter } from './anthropic/index.js';
export { CATALOG, type CatalogEntry, envNameOf } from './catalog.js';
export { geminiAdapter } from './gemini/index.js';
export { openaiCompatibleAdapter } from './openai-compatible/index.js';
export { parseRetryAfterMs } from './retry-after.js';
export { SseDecoder, type SseEvent, SseEventTooLargeError } from './sse-decoder.js';
export * from './types.js';
export {
  type CreateUpstreamClientOptions,
  createUpstreamClient,
  type SendOptions,
  type StreamOptions,
  type UpstreamClient,
  type UpstreamEventStream,
  type UpstreamStreamResult,
} from './upstream-client.js';
export { failureKindForStatus, upstreamFailureFromStatus } from './upstream-failure-from-status.js';
