import { badResponse, isRecord, readTokenCount } from '../json-value.js';
import type { UpstreamUsage } from '../types.js';

/**
 * Gemini's `usageMetadata`: `promptTokenCount` is the input (cached content included); the output billed
 * is `candidatesTokenCount` plus `thoughtsTokenCount` (thinking is billed as output). Gemini's JSON is
 * proto3, which leaves out zero counts, so once the prompt count is reported a missing output count means
 * 0. Without `usageMetadata` or its prompt count nothing is reported and both stay `undefined`.
 *
 * @see https://ai.google.dev/api/generate-content#UsageMetadata
 * @see https://ai.google.dev/gemini-api/docs/thinking#pricing
 */
export function convertGeminiUsage(usageMetadata: unknown): UpstreamUsage {
  if (usageMetadata === undefined || usageMetadata === null) {
    return { promptTokens: undefined, completionTokens: undefined };
  }
  if (!isRecord(usageMetadata)) throw badResponse('upstream usageMetadata is not an object');
  const prompt = readTokenCount(usageMetadata, 'promptTokenCount');
  const candidates = readTokenCount(usageMetadata, 'candidatesTokenCount');
  const thoughts = readTokenCount(usageMetadata, 'thoughtsTokenCount');
  if (prompt === undefined) {
    return {
      promptTokens: undefined,
      completionTokens: candidates === undefined ? undefined : candidates + (thoughts ?? 0),
    };
  }
  return { promptTokens: prompt, completionTokens: (candidates ?? 0) + (thoughts ?? 0) };
}
