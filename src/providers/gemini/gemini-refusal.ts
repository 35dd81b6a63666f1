import { MAX_JSON_DEPTH } from '../../json-depth.js';
import { toolArgumentsObject } from '../tool-arguments.js';
import {
  type ChatMessage,
  OPENAI_ONLY_FIELDS,
  type OpenAIOnlyFields,
  type ProviderConfig,
  type Refusal,
  type UpstreamCallSpec,
} from '../types.js';
import { unsupportedGeminiContentPart } from './convert-gemini-content-part.js';

/** The most candidates one `generateContent` call returns (`candidateCount`). */
export const GEMINI_MAX_CANDIDATES = 8;

/** The most alternatives per token Gemini returns (`logprobs`). */
export const GEMINI_MAX_TOP_LOGPROBS = 20;

/**
 * The first setting of a call Gemini cannot honour, or `undefined`. In this order:
 * - an OpenAI-only field `OPENAI_ONLY_FIELDS` marks `refuse` (`web_search_options`);
 * - `n` above 8, Gemini's most candidates per call;
 * - `top_logprobs` above 20, the most alternatives Gemini returns per token;
 * - in the messages: an image by URL (the gateway never fetches a caller's URL, and Gemini's `fileData`
 *   takes only URIs of files uploaded to Google), an inline image Gemini does not read (GIF), a file by id,
 *   an inline file without a media type, and a past tool call whose arguments are not a JSON object
 *   (Gemini's `functionCall.args` must be one).
 * Pure: it reads the call only.
 *
 * @see https://ai.google.dev/api/generate-content#generationconfig
 * @see https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/inference#generationconfig
 * @see https://ai.google.dev/gemini-api/docs/image-understanding
 * @see https://ai.google.dev/api/caching#FunctionCall
 */
export function geminiRefusal(_provider: ProviderConfig, spec: UpstreamCallSpec): Refusal | undefined {
  for (const field of Object.keys(OPENAI_ONLY_FIELDS) as (keyof OpenAIOnlyFields)[]) {
    if (OPENAI_ONLY_FIELDS[field] === 'refuse' && spec.openai[field] !== undefined) {
      return { param: field, message: `Gemini does not support ${field}.` };
    }
  }
  if (spec.n > GEMINI_MAX_CANDIDATES) {
    return {
      param: 'n',
      message: `Gemini returns at most ${GEMINI_MAX_CANDIDATES} choices per request (n).`,
    };
  }
  const top = spec.logprobs?.top;
  if (top !== undefined && top > GEMINI_MAX_TOP_LOGPROBS) {
    return {
      param: 'top_logprobs',
      message: `Gemini returns at most ${GEMINI_MAX_TOP_LOGPROBS} alternatives per token (top_logprobs).`,
    };
  }
  for (const [i, message] of spec.messages.entries()) {
    const refusal = messageRefusal(message, i);
    if (refusal !== undefined) return refusal;
  }
  return undefined;
}

function messageRefusal(message: ChatMessage, i: number): Refusal | undefined {
  if (message.role === 'user' && typeof message.content !== 'string') {
    for (const [j, part] of message.content.entries()) {
      const why = unsupportedGeminiContentPart(part);
      if (why !== undefined) return { param: `messages[${i}].content[${j}]`, message: `Gemini ${why}.` };
    }
  }
  if (message.role === 'assistant') {
    for (const [j, call] of (message.toolCalls ?? []).entries()) {
      if (toolArgumentsObject(call.arguments) === undefined) {
        return {
          param: `messages[${i}].tool_calls[${j}].function.arguments`,
          message: `Gemini takes the arguments of a past tool call as a JSON object only, nested at most ${MAX_JSON_DEPTH} levels.`,
        };
      }
    }
  }
  return undefined;
}
