import { badResponse, isRecord } from '../json-value.js';
import type { ChoiceResult } from '../types.js';
import { mapOpenAIFinishReason } from './map-openai-finish-reason.js';
import { type ChoicePlace, readOpenAIToolCalls } from './read-openai-tool-calls.js';

/**
 * Reads one `choices[]` element of an OpenAI-compatible answer:
 *
 * - text: `message.content` as given when it is a string; `null` (or absent) when the model said nothing
 *   (only tool calls, say); from some compatible upstreams (Mistral) a list of parts, whose `text` parts
 *   are joined (`null` when there is none: thinking parts are not text);
 * - tool calls (`readOpenAIToolCalls`);
 * - `message.refusal` when it is a non-empty string (OpenAI's structured-output refusals), else the
 *   `refusal` parts of a list content;
 * - `logprobs`: the object as the upstream sent it; when there is none, `null` if the call asked for log
 *   probabilities and left out if it did not;
 * - `finish_reason` through `mapOpenAIFinishReason`, as the upstream said it (a choice with tool calls
 *   that says `stop` stays `stop`).
 *
 * Reasoning text some hosts add to the message (DeepSeek's `reasoning_content`, Groq's `reasoning`) is
 * not part of the answer (the response reads it apart, with `readOpenAIReasoning`, for the bill).
 *
 * @see https://platform.openai.com/docs/api-reference/chat/object#chat/object-choices
 * @see https://platform.openai.com/docs/guides/structured-outputs#refusals
 * @see https://api-docs.deepseek.com/guides/reasoning_model
 */
export function parseOpenAIChoice(
  choice: unknown,
  place: ChoicePlace,
  logprobsRequested: boolean,
  status: number,
): ChoiceResult {
  const position = place.choice;
  if (!isRecord(choice) || !isRecord(choice.message)) {
    throw badResponse(`upstream answer has no choices[${position}].message`, status);
  }
  const { message } = choice;
  const content = readContent(message.content, position, status);
  const result: ChoiceResult = {
    text: content.text,
    toolCalls: readOpenAIToolCalls(message, place),
    finishReason: mapOpenAIFinishReason(choice.finish_reason),
  };
  const refusal =
    typeof message.refusal === 'string' && message.refusal !== '' ? message.refusal : content.refusal;
  if (refusal !== undefined) result.refusal = refusal;
  if (isRecord(choice.logprobs)) result.logprobs = choice.logprobs;
  else if (logprobsRequested) result.logprobs = null;
  return result;
}

interface Content {
  text: string | null;
  refusal: string | undefined;
}

const NOTHING_SAID: Content = Object.freeze({ text: null, refusal: undefined });

function readContent(content: unknown, position: number, status: number): Content {
  if (typeof content === 'string') return { text: content, refusal: undefined };
  if (content === null || content === undefined) return NOTHING_SAID;
  if (!Array.isArray(content)) {
    throw badResponse(`upstream choices[${position}].message.content is neither text nor parts`, status);
  }
  let text: string | null = null;
  let refusal: string | undefined;
  for (const part of content as unknown[]) {
    if (!isRecord(part)) continue;
    if (part.type === 'text' && typeof part.text === 'string') text = (text ?? '') + part.text;
    else if (part.type === 'refusal' && typeof part.refusal === 'string')
      refusal = (refusal ?? '') + part.refusal;
  }
  return { text, refusal: refusal === '' ? undefined : refusal };
}
