import type { ProviderAdapter } from '../types.js';
import { buildOpenAIRequest } from './build-openai-request.js';
import { parseOpenAIResponse } from './parse-openai-response.js';

/**
 * The one adapter for every OpenAI-compatible upstream (DeepSeek, Qwen, Kimi, Groq's gpt-oss-120b and
 * Llama, Mistral): what differs between them is configuration (base URL, key, model), not code.
 */
export const openaiCompatibleAdapter: ProviderAdapter = Object.freeze({
  wireFormat: 'openai-compatible',
  buildRequest: buildOpenAIRequest,
  parseResponse: parseOpenAIResponse,
});

export { buildOpenAIRequest } from './build-openai-request.js';
export { mapOpenAIFinishReason } from './map-openai-finish-reason.js';
export { openaiErrorReader } from './openai-error.js';
export { convertOpenAIUsage, parseOpenAIResponse } from './parse-openai-response.js';
