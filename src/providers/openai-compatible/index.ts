import type { ProviderAdapter } from '../types.js';
import { buildOpenAIRequest } from './build-openai-request.js';
import { openaiRefusal } from './openai-refusal.js';
import { parseOpenAIResponse } from './parse-openai-response.js';
import { createOpenAIStreamParser } from './parse-openai-stream.js';

/**
 * The one adapter for every OpenAI-compatible upstream (DeepSeek, Qwen, Kimi, Groq's gpt-oss-120b and
 * Llama, Mistral): what differs between them is configuration (base URL, key, model), not code.
 */
export const openaiCompatibleAdapter: ProviderAdapter = Object.freeze({
  wireFormat: 'openai-compatible',
  refusal: openaiRefusal,
  buildRequest: buildOpenAIRequest,
  streamParser: createOpenAIStreamParser,
  parseResponse: parseOpenAIResponse,
});

export { buildOpenAIRequest } from './build-openai-request.js';
export { convertOpenAIUsage } from './convert-openai-usage.js';
export { convertToOpenAIContentParts } from './convert-to-openai-content-parts.js';
export { convertToOpenAIMessages } from './convert-to-openai-messages.js';
export { convertToOpenAIResponseFormat } from './convert-to-openai-response-format.js';
export { convertToOpenAIToolChoice, convertToOpenAITools } from './convert-to-openai-tools.js';
export { mapOpenAIFinishReason } from './map-openai-finish-reason.js';
export { openaiErrorReader } from './openai-error.js';
export { openaiRefusal } from './openai-refusal.js';
export { OpenAIStreamChoice } from './openai-stream-choice.js';
export { openaiToolCallId } from './openai-tool-call-id.js';
export { parseOpenAIChoice } from './parse-openai-choice.js';
export { parseOpenAIResponse } from './parse-openai-response.js';
export { createOpenAIStreamParser } from './parse-openai-stream.js';
export { readOpenAIToolCalls } from './read-openai-tool-calls.js';
