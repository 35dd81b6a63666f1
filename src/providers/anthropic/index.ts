import type { ProviderAdapter } from '../types.js';
import { buildAnthropicRequest } from './build-anthropic-request.js';
import { parseAnthropicResponse } from './parse-anthropic-response.js';

/** The Anthropic Messages API adapter (prov-claude). */
export const anthropicAdapter: ProviderAdapter = Object.freeze({
  wireFormat: 'anthropic',
  buildRequest: buildAnthropicRequest,
  parseResponse: parseAnthropicResponse,
});

export { anthropicErrorReader } from './anthropic-error.js';
export { ANTHROPIC_VERSION, buildAnthropicRequest } from './build-anthropic-request.js';
export { convertAnthropicUsage } from './convert-anthropic-usage.js';
export { convertToAnthropicMessages } from './convert-to-anthropic-messages.js';
export { mapAnthropicStopReason } from './map-anthropic-stop-reason.js';
export { parseAnthropicResponse } from './parse-anthropic-response.js';
