import type { ProviderAdapter } from '../types.js';
import { buildGeminiRequest } from './build-gemini-request.js';
import { parseGeminiResponse } from './parse-gemini-response.js';

/** The Gemini API (`generateContent`) adapter (prov-gemini). */
export const geminiAdapter: ProviderAdapter = Object.freeze({
  wireFormat: 'gemini',
  buildRequest: buildGeminiRequest,
  parseResponse: parseGeminiResponse,
});

export { buildGeminiRequest } from './build-gemini-request.js';
export { convertGeminiUsage } from './convert-gemini-usage.js';
export { convertToGeminiContents } from './convert-to-gemini-contents.js';
export { geminiErrorReader } from './gemini-error.js';
export { mapGeminiFinishReason } from './map-gemini-finish-reason.js';
export { parseGeminiResponse } from './parse-gemini-response.js';
