import type { ProviderAdapter } from '../types.js';
import { buildAnthropicCountRequest, parseAnthropicCount } from './anthropic-count-tokens.js';
import { anthropicRefusal } from './anthropic-refusal.js';
import { buildAnthropicRequest } from './build-anthropic-request.js';
import { parseAnthropicResponse } from './parse-anthropic-response.js';
import { createAnthropicStreamParser } from './parse-anthropic-stream.js';

/** The Anthropic Messages API adapter (prov-claude). */
export const anthropicAdapter: ProviderAdapter = Object.freeze({
  wireFormat: 'anthropic',
  refusal: anthropicRefusal,
  buildRequest: buildAnthropicRequest,
  streamParser: createAnthropicStreamParser,
  parseResponse: parseAnthropicResponse,
  buildCountRequest: buildAnthropicCountRequest,
  parseCount: parseAnthropicCount,
});

export { anthropicErrorReader } from './anthropic-error.js';
export { anthropicRefusal } from './anthropic-refusal.js';
export { anthropicRefusalExplanation } from './anthropic-refusal-explanation.js';
export { ANTHROPIC_VERSION, buildAnthropicRequest } from './build-anthropic-request.js';
export { convertAnthropicContentPart } from './convert-anthropic-content-part.js';
export { convertAnthropicThinking, THINKING_BUDGETS } from './convert-anthropic-thinking.js';
export { convertAnthropicTools } from './convert-anthropic-tools.js';
export { convertAnthropicUsage } from './convert-anthropic-usage.js';
export { convertToAnthropicMessages } from './convert-to-anthropic-messages.js';
export { JSON_OBJECT_TOOL_NAME } from './json-object-tool.js';
export { mapAnthropicStopReason } from './map-anthropic-stop-reason.js';
export { parseAnthropicResponse } from './parse-anthropic-response.js';
export { createAnthropicStreamParser } from './parse-anthropic-stream.js';
