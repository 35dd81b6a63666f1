import type { ProviderAdapter } from '../types.js';
import { buildGeminiRequest } from './build-gemini-request.js';
import { geminiRefusal } from './gemini-refusal.js';
import { parseGeminiResponse } from './parse-gemini-response.js';
import { createGeminiStreamParser } from './parse-gemini-stream.js';

/** The Gemini API (`generateContent`) adapter (prov-gemini). */
export const geminiAdapter: ProviderAdapter = Object.freeze({
  wireFormat: 'gemini',
  refusal: geminiRefusal,
  buildRequest: buildGeminiRequest,
  streamParser: createGeminiStreamParser,
  parseResponse: parseGeminiResponse,
});

export { buildGeminiGenerationConfig } from './build-gemini-generation-config.js';
export { buildGeminiRequest } from './build-gemini-request.js';
export { convertGeminiCandidate } from './convert-gemini-candidate.js';
export { convertGeminiContentPart, unsupportedGeminiContentPart } from './convert-gemini-content-part.js';
export { convertGeminiLogprobs } from './convert-gemini-logprobs.js';
export { convertGeminiTools } from './convert-gemini-tools.js';
export { convertGeminiUsage } from './convert-gemini-usage.js';
export { convertToGeminiContents } from './convert-to-gemini-contents.js';
export { geminiErrorReader } from './gemini-error.js';
export { GEMINI_MAX_CANDIDATES, GEMINI_MAX_TOP_LOGPROBS, geminiRefusal } from './gemini-refusal.js';
export { geminiThinkingBudget } from './gemini-thinking-budget.js';
export { geminiThoughtSignature } from './gemini-thought-signature.js';
export { geminiToolCallId } from './gemini-tool-call-id.js';
export { geminiChoiceFinishReason, mapGeminiFinishReason } from './map-gemini-finish-reason.js';
export { parseGeminiResponse } from './parse-gemini-response.js';
export { createGeminiStreamParser } from './parse-gemini-stream.js';
export { readGeminiFunctionCall } from './read-gemini-function-call.js';
