import { AUDIO_BYTES_PER_TOKEN } from '../billing/estimate.js';
import type { ChoiceResult, UpstreamCallSpec } from '../providers/types.js';

type CountFn = (text: string) => number;
let loading: Promise<CountFn> | undefined;

/** Loads the o200k BPE tokenizer once (it is large, so only when first needed or preloaded at start). */
export function loadTokenizer(): Promise<CountFn> {
  loading ??= import('gpt-tokenizer/encoding/o200k_base').then((m) => (text: string) => m.countTokens(text));
  return loading;
}

/**
 * Counts the prompt locally for an upstream that reported no usage: o200k BPE on every text the upstream
 * read (message text, tool calls and results, tool definitions and the response schema as JSON) plus
 * OpenAI's chat-format overhead (3 tokens per message, 3 to prime the reply); images count by the
 * provider's bound, audio and files as the hold counts them.
 * https://github.com/openai/openai-cookbook/blob/main/examples/How_to_count_tokens_with_tiktoken.ipynb
 */
export async function countPromptTokens(
  spec: Pick<UpstreamCallSpec, 'messages' | 'tools' | 'responseFormat'>,
  imageTokens: number,
): Promise<number> {
  const count = await loadTokenizer();
  let total = 3;
  for (const m of spec.messages) {
    total += 3 + count(m.role);
    if (typeof m.content === 'string') total += count(m.content);
    else if (Array.isArray(m.content)) {
      for (const part of m.content) {
        if (part.type === 'text') total += count(part.text);
        else if (part.type === 'image') total += imageTokens;
        else if (part.type === 'audio')
          total += Math.ceil((part.data.length * 3) / 4 / AUDIO_BYTES_PER_TOKEN);
        else if (part.data !== undefined) total += Math.ceil((part.data.length * 3) / 4) + imageTokens;
      }
    }
    if (m.role === 'assistant') {
      for (const call of m.toolCalls ?? []) total += count(call.name) + count(call.arguments);
      if (m.refusal !== undefined) total += count(m.refusal);
    }
  }
  if (spec.tools !== undefined) total += count(JSON.stringify(spec.tools));
  if (spec.responseFormat?.type === 'json_schema') total += count(JSON.stringify(spec.responseFormat));
  return total;
}

/** Counts what the choices wrote: their text, refusals and tool calls. */
export async function countCompletionTokens(choices: readonly ChoiceResult[]): Promise<number> {
  const count = await loadTokenizer();
  let total = 0;
  for (const choice of choices) {
    if (choice.text !== null) total += count(choice.text);
    if (choice.refusal !== undefined) total += count(choice.refusal);
    for (const call of choice.toolCalls) total += count(call.name) + count(call.arguments);
  }
  return total;
}
