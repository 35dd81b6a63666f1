import { badResponse, isRecord, readTokenCount } from '../json-value.js';
import type { UpstreamUsage } from '../types.js';

/**
 * Gemini's `usageMetadata`: `promptTokenCount` is the input (cached content included); the output billed
 * is `candidatesTokenCount` (all candidates) plus `thoughtsTokenCount` (thinking is billed as output).
 * Gemini's JSON is proto3, which leaves out zero counts, so once the prompt count is reported a missing
 * output count means 0. Without `usageMetadata` or its prompt count nothing is reported and both stay
 * `undefined`. `cachedContentTokenCount` (the part of the prompt read from the cache) and
 * `thoughtsTokenCount` are passed on as `cachedPromptTokens` and `reasoningTokens`, each only when
 * Gemini reports it.
 *
 * @see https://ai.google.dev/api/generate-content#UsageMetadata
 * @see https://ai.google.dev/gemini-api/docs/thinking#pricing
 * @see https://ai.google.dev/gemini-api/docs/caching#implicit-caching
 */
export function convertGeminiUsage(usageMetadata: unknown): UpstreamUsage {
  if (usageMetadata === undefined || usageMetadata === null) {
    return { promptTokens: undefined, completionTokens: undefined };
  }
  if (!isRecord(usageMetadata)) throw badResponse('upstream usageMetadata is not an object');
  const prompt = readTokenCount(usageMetadata, 'promptTokenCount');
  const candidates = readTokenCount(usageMetadata, 'candidatesTokenCount');
  const thoughts = readTokenCount(usageMetadata, 'thoughtsTokenCount');
  const cached = readTokenCount(usageMetadata, 'cachedContentTokenCount');
  const usage: UpstreamUsage =
    prompt === undefined
      ? {
          promptTokens: undefined,
          completionTokens: candidates === undefined ? undefined : candidates + (thoughts ?? 0),
        }
      : { promptTokens: prompt, completionTokens: (candidates ?? 0) + (thoughts ?? 0) };
  if (cached !== undefined) usage.cachedPromptTokens = cached;
  if (thoughts !== undefined) usage.reasoningTokens = thoughts;
  return usage;
}
