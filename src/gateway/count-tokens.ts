import type { ChatMessage } from '../providers/types.js';

type CountFn = (text: string) => number;
let loading: Promise<CountFn> | undefined;

/** Loads the o200k BPE tokenizer once (it is large, so only when first needed or preloaded at start). */
export function loadTokenizer(): Promise<CountFn> {
  loading ??= import('gpt-tokenizer/encoding/o200k_base').then((m) => (text: string) => m.countTokens(text));
  return loading;
}

/**
 * Counts tokens locally for an upstream that reported no usage: o200k BPE on each message's text, plus
 * OpenAI's chat-format overhead (3 tokens per message, 3 to prime the reply).
 * https://github.com/openai/openai-cookbook/blob/main/examples/How_to_count_tokens_with_tiktoken.ipynb
 */
export async function countPromptTokens(messages: readonly ChatMessage[]): Promise<number> {
  const count = await loadTokenizer();
  let total = 3;
  for (const m of messages) total += 3 + count(m.role) + count(m.content);
  return total;
}

export async function countCompletionTokens(text: string): Promise<number> {
  const count = await loadTokenizer();
  return count(text);
}
