import { nanoToUsd } from '../billing/money.js';
import type { ChatCompletion } from '../gateway/types.js';

/** Spec §2.4: the `chat.completion` body with Tollgate's `meta`. */
export interface ChatCompletionBody {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: Array<{
    index: number;
    message: { role: 'assistant'; content: string };
    finish_reason: string;
  }>;
  /** `cost` (USD, = meta.cost.total) is where OpenRouter-style tooling looks for a call's cost. */
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number; cost: number };
  meta: {
    provider: string;
    cost: { input: number; output: number; total: number };
    balance: number;
    duration_ms: number;
  };
}

export function chatCompletionBody(c: ChatCompletion): ChatCompletionBody {
  const input = nanoToUsd(c.inputCostNano);
  const output = nanoToUsd(c.outputCostNano);
  // Spec §2.4 rule 1: total is exactly input + output as JavaScript numbers.
  const total = input + output;
  return {
    id: c.id,
    object: 'chat.completion',
    created: c.created,
    model: c.model,
    choices: [{ index: 0, message: { role: 'assistant', content: c.text }, finish_reason: c.finishReason }],
    usage: {
      prompt_tokens: c.promptTokens,
      completion_tokens: c.completionTokens,
      total_tokens: c.promptTokens + c.completionTokens,
      cost: total,
    },
    meta: {
      provider: c.provider,
      cost: { input, output, total },
      balance: nanoToUsd(c.balanceNano),
      duration_ms: c.durationMs,
    },
  };
}
