import { AUDIO_BYTES_PER_TOKEN, fileSize } from '../billing/estimate.js';
import type { ChoiceResult, ReasoningOutput, UpstreamCallSpec } from '../providers/types.js';
import type { TokenCounter } from './token-counter.js';

async function sum(counter: TokenCounter, texts: string[], owner?: string): Promise<number> {
  const { counts } = await counter.count(texts, owner);
  let total = 0;
  for (const n of counts) total += n;
  return total;
}

/**
 * Counts the prompt locally for an upstream that reported no usage: o200k BPE on every text the upstream
 * read (message text, tool calls and results, tool definitions and the response schema as JSON) plus
 * OpenAI's chat-format overhead (3 tokens per message and its role, 3 to prime the reply); images count
 * by the provider's bound, audio and files as the hold counts them. Counted off the event loop, within a
 * time bound past which UTF-8 bytes stand in (`TokenCounter`); the caller caps the count at the hold's
 * prompt bound.
 * https://github.com/openai/openai-cookbook/blob/main/examples/How_to_count_tokens_with_tiktoken.ipynb
 */
export function countPromptTokens(
  spec: Pick<UpstreamCallSpec, 'messages' | 'tools' | 'responseFormat'>,
  imageTokens: number,
  counter: TokenCounter,
  owner?: string,
): Promise<number> {
  const texts: string[] = [];
  let fixed = 3;
  for (const m of spec.messages) {
    fixed += 4;
    if (typeof m.content === 'string') texts.push(m.content);
    else if (Array.isArray(m.content)) {
      for (const part of m.content) {
        if (part.type === 'text') texts.push(part.text);
        else if (part.type === 'image') fixed += imageTokens;
        else if (part.type === 'audio')
          fixed += Math.ceil((part.data.length * 3) / 4 / AUDIO_BYTES_PER_TOKEN);
        else {
          const file = fileSize(part);
          fixed += file.tokens + file.images * imageTokens;
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
  return sum(counter, texts, owner).then((n) => n + fixed);
}

/**
 * Opaque reasoning (thinking signatures, redacted or encrypted thinking: base64 of data the upstream does
 * not show) counts one token per this many characters of it.
 */
export const OPAQUE_CHARS_PER_TOKEN = 4;

/**
 * Counts what an answer generated: its choices' text, refusals and tool calls, and the reasoning it
 * carried apart — reasoning text as text, opaque reasoning by its size (`OPAQUE_CHARS_PER_TOKEN`). Off the
 * event loop, bounded in time; the caller caps the count at what the call could generate.
 */
export function countCompletionTokens(
  choices: readonly ChoiceResult[],
  reasoning: ReasoningOutput | undefined,
  counter: TokenCounter,
  owner?: string,
): Promise<number> {
  const texts: string[] = [];
  for (const choice of choices) {
    if (choice.text !== null) texts.push(choice.text);
    if (choice.refusal !== undefined) texts.push(choice.refusal);
    for (const call of choice.toolCalls) texts.push(call.name, call.arguments);
  }
  if (reasoning === undefined) return sum(counter, texts, owner);
  texts.push(...reasoning.texts);
  const opaque = Math.ceil(reasoning.opaqueChars / OPAQUE_CHARS_PER_TOKEN);
  return sum(counter, texts, owner).then((n) => n + opaque);
}
