import { badResponse, isRecord } from '../json-value.js';
import type { ChoiceResult, ToolCall } from '../types.js';
import { convertGeminiLogprobs } from './convert-gemini-logprobs.js';
import { geminiToolCallId } from './gemini-tool-call-id.js';
import { mapGeminiFinishReason } from './map-gemini-finish-reason.js';

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
 * - `toolCalls`: its `functionCall` parts in order, `arguments` the JSON text of `args` (`{}` when
 *   absent), `id` Gemini's own when it sends one, otherwise generated (`geminiToolCallId`);
 * - `finishReason`: `tool_calls` when it made calls and stopped (Gemini says `STOP`), otherwise
 *   `mapGeminiFinishReason` (calls that ran into the token limit stay `length`, blocked ones
 *   `content_filter`);
 * - `logprobs`, when asked for: `convertGeminiLogprobs` of its `logprobsResult`.
 * Other parts (inline data, code execution) are not part of an OpenAI answer and are skipped. A
 * `functionCall` without a name, or whose `args` is not an object, makes the answer unreadable.
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
      toolCalls.push(readFunctionCall(part.functionCall, index, context));
    } else if (typeof part.text === 'string' && part.thought !== true) {
      texts.push(part.text);
    }
  }
  const text = texts.join('');
  const mapped = mapGeminiFinishReason(candidate.finishReason);
  const choice: ChoiceResult = {
    text: text === '' ? null : text,
    toolCalls,
    finishReason: toolCalls.length > 0 && mapped === 'stop' ? 'tool_calls' : mapped,
  };
  if (context.logprobs !== undefined) {
    choice.logprobs = convertGeminiLogprobs(candidate.logprobsResult, context.logprobs.top);
  }
  return choice;
}

function readFunctionCall(call: unknown, part: number, context: CandidateContext): ToolCall {
  if (!isRecord(call) || typeof call.name !== 'string' || call.name === '') {
    throw badResponse('upstream functionCall has no name');
  }
  const args = call.args ?? {};
  if (!isRecord(args)) throw badResponse('upstream functionCall args is not an object');
  const name = call.name;
  const argumentsText = JSON.stringify(args);
  const id =
    typeof call.id === 'string' && call.id !== ''
      ? call.id
      : geminiToolCallId({
          responseId: context.responseId,
          modelVersion: context.modelVersion,
          turn: context.turn,
          candidate: context.position,
          part,
          name,
          arguments: argumentsText,
        });
  return { id, name, arguments: argumentsText };
}
