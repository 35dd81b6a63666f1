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
import { unsupportedContentPart } from './convert-anthropic-content-part.js';
import { enablesThinking } from './convert-anthropic-thinking.js';

const FORMAT = 'Anthropic Messages';

/**
 * The first setting of a call the Messages API cannot honour, checked before any money is held:
 * - `n` > 1 (one answer per call) and `logprobs` (not reported);
 * - a user content part it cannot read (audio, a file by id, a file other than PDF or plain text, an
 *   inline image other than JPEG/PNG/GIF/WebP) and a past tool call whose arguments are not a JSON object
 *   (a `tool_use` block's `input` is an object);
 * - a whitespace-only `stop` sequence (Anthropic refuses those);
 * - an OpenAI-only field whose `OPENAI_ONLY_FIELDS` rule is `refuse`;
 * - `response_format: json_object` (made with a forced tool) together with the caller's tools, or with
 *   extended thinking (which allows no forced tool);
 * - extended thinking (`reasoning_effort` low … xhigh) with `tool_choice` `required` or a named function:
 *   with thinking only `auto` and `none` are allowed.
 * A Messages request passed through as sent (`spec.anthropic`) is never refused here.
 *
 * @see https://docs.anthropic.com/en/api/messages
 * @see https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking#extended-thinking-with-tool-use
 * @see https://docs.anthropic.com/en/docs/build-with-claude/vision
 * @see https://docs.anthropic.com/en/docs/build-with-claude/pdf-support
 */
export function anthropicRefusal(_provider: ProviderConfig, spec: UpstreamCallSpec): Refusal | undefined {
  // A Messages request passed through is sent as its client wrote it: the upstream judges it.
  if (spec.anthropic !== undefined) return undefined;
  if (spec.n > 1) return refuse('n', 'cannot return more than one choice per call (n must be 1)');
  if (spec.logprobs !== undefined) return refuse('logprobs', 'does not return log probabilities');
  const inMessages = messageRefusal(spec.messages);
  if (inMessages !== undefined) return inMessages;
  if (spec.params.stop?.some((sequence) => sequence.trim() === '')) {
    return refuse('stop', 'cannot stop on a sequence of whitespace only');
  }
  for (const field of Object.keys(OPENAI_ONLY_FIELDS) as (keyof OpenAIOnlyFields)[]) {
    if (OPENAI_ONLY_FIELDS[field] === 'refuse' && spec.openai[field] !== undefined) {
      return refuse(field, `has no equivalent of ${field}`);
    }
  }
  const thinking = enablesThinking(spec.reasoningEffort);
  if (spec.responseFormat?.type === 'json_object') {
    if ((spec.tools?.length ?? 0) > 0) {
      return refuse(
        'response_format',
        'cannot combine response_format json_object with tools: JSON mode is a forced tool call, which would keep the model from calling yours',
      );
    }
    if (thinking) {
      return refuse(
        'response_format',
        'cannot combine response_format json_object with reasoning_effort: JSON mode is a forced tool call, which extended thinking does not allow',
      );
    }
  }
  const choice = spec.toolChoice?.type;
  if (thinking && (choice === 'required' || choice === 'function')) {
    return refuse(
      'tool_choice',
      'allows only tool_choice auto or none with reasoning_effort (extended thinking)',
    );
  }
  return undefined;
}

function messageRefusal(messages: readonly ChatMessage[]): Refusal | undefined {
  for (const [i, message] of messages.entries()) {
    if (message.role === 'user' && typeof message.content !== 'string') {
      for (const [j, part] of message.content.entries()) {
        const why = unsupportedContentPart(part);
        if (why !== undefined) return refuse(`messages[${i}].content[${j}]`, why);
      }
    }
    if (message.role === 'assistant') {
      for (const [j, call] of (message.toolCalls ?? []).entries()) {
        if (toolArgumentsObject(call.arguments) === undefined) {
          return refuse(
            `messages[${i}].tool_calls[${j}].function.arguments`,
            `takes a tool call only with arguments that are a JSON object, nested at most ${MAX_JSON_DEPTH} levels`,
          );
        }
      }
    }
  }
  return undefined;
}

function refuse(param: string, why: string): Refusal {
  return { param, message: `${FORMAT} ${why}.` };
}
