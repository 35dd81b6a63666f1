import { badResponse, isRecord } from '../json-value.js';
import type { ChatResult, ProviderConfig, UpstreamHttpResponse } from '../types.js';
import { readSuccessBody } from '../upstream-failure-from-status.js';
import { convertGeminiUsage } from './convert-gemini-usage.js';
import { geminiErrorReader } from './gemini-error.js';
import { mapGeminiFinishReason } from './map-gemini-finish-reason.js';

/**
 * Reads a Gemini `GenerateContentResponse`. The text is the first candidate's parts joined, leaving out
 * thought summaries (`thought: true`). A prompt blocked before any candidate (`promptFeedback.blockReason`)
 * is an empty, content-filtered completion; no candidate for any other reason is unreadable. A candidate
 * without content (blocked, or all the budget spent on thinking) has empty text.
 *
 * @see https://ai.google.dev/api/generate-content#generatecontentresponse
 * @see https://ai.google.dev/api/generate-content#PromptFeedback
 */
export function parseGeminiResponse(provider: ProviderConfig, response: UpstreamHttpResponse): ChatResult {
  const body = readSuccessBody(response, geminiErrorReader, { secret: provider.apiKey });
  const usage = convertGeminiUsage(body.usageMetadata);
  const model = typeof body.modelVersion === 'string' ? body.modelVersion : undefined;
  const candidates = body.candidates;
  const candidate = Array.isArray(candidates) ? (candidates[0] as unknown) : undefined;
  if (candidate === undefined) {
    const feedback = body.promptFeedback;
    if (isRecord(feedback) && typeof feedback.blockReason === 'string') {
      return { text: '', finishReason: 'content_filter', usage, model };
    }
    throw badResponse('upstream answer has no candidates', response.status);
  }
  if (!isRecord(candidate)) throw badResponse('upstream candidates[0] is not an object', response.status);
  return {
    text: readCandidateText(candidate.content),
    finishReason: mapGeminiFinishReason(candidate.finishReason),
    usage,
    model,
  };
}

function readCandidateText(content: unknown): string {
  if (!isRecord(content) || !Array.isArray(content.parts)) return '';
  return content.parts
    .map((part: unknown) =>
      isRecord(part) && part.thought !== true && typeof part.text === 'string' ? part.text : '',
    )
    .join('');
}
