import { isRecord } from '../json-value.js';
import type { ChoiceResult, ToolCall } from '../types.js';
import { convertGeminiLogprobs } from './convert-gemini-logprobs.js';
import { geminiChoiceFinishReason } from './map-gemini-finish-reason.js';
import { readGeminiFunctionCall } from './read-gemini-function-call.js';

/** What a candidate is read with: the answer's ids and what the request asked for. */
export interface CandidateContext {
  responseId: string | undefined;
  modelVersion: string | undefined;
  /** How many messages the request carried (for generated tool call ids). */
  turn: number;
  /** Position of the candidate among the answer's (ordered by `index`). */
  position: number;
  /** `undefined`: log probabilities were not asked for; otherwise `top_logprobs` (if any). */
  logprobs: { top: number | undefined } | undefined;
}

/**
 * One Gemini `Candidate` as a choice:
 * - `text`: its text parts joined, thought summaries (`thought: true`) left out; `null` when there is no
 *   text (only function calls, or no content at all: blocked, or the budget all spent on thinking);
 * - `toolCalls`: its `functionCall` parts in order (`readGeminiFunctionCall`);
 * - `finishReason`: `geminiChoiceFinishReason`'s (`tool_calls` when it made calls and stopped);
 * - `logprobs`, when asked for: `convertGeminiLogprobs` of its `logprobsResult`.
 * Other parts (inline data, code execution) are not part of an OpenAI answer and are skipped.
 *
 * @see https://ai.google.dev/api/generate-content#candidate
 * @see https://ai.google.dev/api/caching#Part
 * @see https://ai.google.dev/gemini-api/docs/function-calling#how-it-works
 */
export function convertGeminiCandidate(
  candidate: Record<string, unknown>,
  context: CandidateContext,
): ChoiceResult {
  const content = candidate.content;
  const parts: unknown[] = isRecord(content) && Array.isArray(content.parts) ? content.parts : [];
  const texts: string[] = [];
  const toolCalls: ToolCall[] = [];
  for (const [index, part] of parts.entries()) {
    if (!isRecord(part)) continue;
    if (part.functionCall !== undefined) {
      toolCalls.push(
        readGeminiFunctionCall(part.functionCall, {
          responseId: context.responseId,
          modelVersion: context.modelVersion,
          turn: context.turn,
          candidate: context.position,
          part: index,
        }),
      );
    } else if (typeof part.text === 'string' && part.thought !== true) {
      texts.push(part.text);
    }
  }
  const text = texts.join('');
  const choice: ChoiceResult = {
    text: text === '' ? null : text,
    toolCalls,
    finishReason: geminiChoiceFinishReason(candidate.finishReason, toolCalls.length > 0),
  };
  if (context.logprobs !== undefined) {
    choice.logprobs = convertGeminiLogprobs(candidate.logprobsResult, context.logprobs.top);
  }
  return choice;
}
