import { indexWithin } from '../answer-index.js';
import { badResponse, isRecord } from '../json-value.js';
import { ReasoningTally } from '../reasoning-tally.js';
import type {
  ChatResult,
  ChoiceResult,
  ProviderConfig,
  UpstreamChatRequest,
  UpstreamHttpResponse,
} from '../types.js';
import { readSuccessBody } from '../upstream-failure-from-status.js';
import { convertGeminiCandidate } from './convert-gemini-candidate.js';
import { convertGeminiUsage } from './convert-gemini-usage.js';
import { geminiErrorReader } from './gemini-error.js';
import { readGeminiThought } from './read-gemini-thought.js';

/**
 * Reads a Gemini `GenerateContentResponse`: one choice per candidate (`convertGeminiCandidate`), ordered
 * by the candidate's `index` (proto3 leaves out index 0: missing is 0; one at or beyond the `n` asked for
 * is the upstream's fault, `indexWithin`), usage from `usageMetadata`, the model from `modelVersion`, the
 * thinking apart (`readGeminiThought`). A prompt blocked before any candidate (`promptFeedback.blockReason`) is
 * answered with empty, content-filtered choices, one per choice asked for; no candidate for any other
 * reason, or a candidate that is not an object, is unreadable.
 *
 * @see https://ai.google.dev/api/generate-content#generatecontentresponse
 * @see https://ai.google.dev/api/generate-content#PromptFeedback
 */
export function parseGeminiResponse(
  provider: ProviderConfig,
  response: UpstreamHttpResponse,
  request: UpstreamChatRequest,
): ChatResult {
  const body = readSuccessBody(response, geminiErrorReader, { secret: provider.apiKey });
  const usage = convertGeminiUsage(body.usageMetadata);
  const model = typeof body.modelVersion === 'string' ? body.modelVersion : undefined;
  const candidates = Array.isArray(body.candidates) ? (body.candidates as unknown[]) : [];
  if (candidates.length === 0) {
    const feedback = body.promptFeedback;
    if (isRecord(feedback) && typeof feedback.blockReason === 'string') {
      return { choices: blockedChoices(request), usage, model };
    }
    throw badResponse('upstream answer has no candidates', response.status);
  }
  const records = candidates.map((candidate, i) => {
    if (!isRecord(candidate))
      throw badResponse(`upstream candidates[${i}] is not an object`, response.status);
    return { candidate, index: indexWithin(candidate.index, 0, request.n, 'candidate') };
  });
  // `sort` is stable: candidates without an index keep the order Gemini sent them in.
  const ordered = records.sort((a, b) => a.index - b.index).map(({ candidate }) => candidate);
  const responseId = typeof body.responseId === 'string' ? body.responseId : undefined;
  const choices = ordered.map((candidate, position) =>
    convertGeminiCandidate(candidate, {
      responseId,
      modelVersion: model,
      turn: request.messages.length,
      position,
      logprobs: request.logprobs,
    }),
  );
  const result: ChatResult = { choices, usage, model };
  const thought = new ReasoningTally();
  ordered.forEach((candidate, position) => {
    const { content } = candidate;
    if (isRecord(content) && Array.isArray(content.parts)) {
      for (const part of content.parts as unknown[]) readGeminiThought(part, position, thought);
    }
  });
  const reasoning = thought.output();
  if (reasoning !== undefined) result.reasoning = reasoning;
  return result;
}

function blockedChoices(request: UpstreamChatRequest): ChoiceResult[] {
  return Array.from({ length: Math.max(1, request.n) }, () => {
    const choice: ChoiceResult = { text: null, toolCalls: [], finishReason: 'content_filter' };
    if (request.logprobs !== undefined) choice.logprobs = null;
    return choice;
  });
}
