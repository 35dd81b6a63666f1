import type { ChoiceResult, ReasoningOutput } from '../providers/types.js';
import { AUDIO_BYTES_PER_TOKEN, type CallShape, fileSize } from './estimate.js';

/** What a tokenizer must count, plus the tokens known without one. */
export interface TextsToCount {
  texts: string[];
  fixedTokens: number;
}

/**
 * Opaque reasoning (thinking signatures, redacted or encrypted thinking: base64 of data the upstream does
 * not show) counts one token per this many characters of it.
 */
export const OPAQUE_CHARS_PER_TOKEN = 4;

/**
 * What of a prompt is counted when an upstream reported no usage (docs/api.md, "Counted usage"): every
 * text the upstream read (message text, tool calls and results, tool definitions and the response schema as
 * JSON) plus OpenAI's chat-format overhead (3 tokens per message and its role, 3 to prime the reply);
 * images count by the provider's bound, audio and files as the hold counts them.
 * https://github.com/openai/openai-cookbook/blob/main/examples/How_to_count_tokens_with_tiktoken.ipynb
 */
export function promptToCount(
  spec: Pick<CallShape, 'messages' | 'tools' | 'responseFormat'>,
  imageTokens: number,
): TextsToCount {
  const texts: string[] = [];
  let fixedTokens = 3;
  for (const m of spec.messages) {
    fixedTokens += 4;
    if (typeof m.content === 'string') texts.push(m.content);
    else if (Array.isArray(m.content)) {
      for (const part of m.content) {
        if (part.type === 'text') texts.push(part.text);
        else if (part.type === 'image') fixedTokens += imageTokens;
        else if (part.type === 'audio')
          fixedTokens += Math.ceil((part.data.length * 3) / 4 / AUDIO_BYTES_PER_TOKEN);
        else {
          const file = fileSize(part);
          fixedTokens += file.tokens + file.images * imageTokens;
        }
      }
    }
    if (m.role === 'assistant') {
      for (const call of m.toolCalls ?? []) texts.push(call.name, call.arguments);
      if (m.refusal !== undefined) texts.push(m.refusal);
    }
  }
  if (spec.tools !== undefined) texts.push(JSON.stringify(spec.tools));
  if (spec.responseFormat?.type === 'json_schema') texts.push(JSON.stringify(spec.responseFormat));
  return { texts, fixedTokens };
}

/**
 * What of an answer is counted: its choices' text, refusals and tool calls, and the reasoning it carried
 * apart — reasoning text as text, opaque reasoning by its size (`OPAQUE_CHARS_PER_TOKEN`).
 */
export function completionToCount(
  choices: readonly ChoiceResult[],
  reasoning: ReasoningOutput | undefined,
): TextsToCount {
  const texts: string[] = [];
  for (const choice of choices) {
    if (choice.text !== null) texts.push(choice.text);
    if (choice.refusal !== undefined) texts.push(choice.refusal);
    for (const call of choice.toolCalls) texts.push(call.name, call.arguments);
  }
  if (reasoning === undefined) return { texts, fixedTokens: 0 };
  texts.push(...reasoning.texts);
  return { texts, fixedTokens: Math.ceil(reasoning.opaqueChars / OPAQUE_CHARS_PER_TOKEN) };
}
