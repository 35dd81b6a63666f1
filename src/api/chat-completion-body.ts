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

/**
 * `JSON.stringify(chatCompletionBody(c))`, written out: the same text byte for byte
 * (test/unit/chat-completion-json.test.ts compares the two on generated completions), without building
 * the nested object and walking it. Strings go through `JSON.stringify` one at a time; numbers are
 * written as JSON writes them (`String` of a finite number; `null` otherwise, as `JSON.stringify` does).
 * `chatCompletionBody` stays the readable definition of the body.
 */
export function chatCompletionJson(c: ChatCompletion): string {
  const input = nanoToUsd(c.inputCostNano);
  const output = nanoToUsd(c.outputCostNano);
  const total = num(input + output);
  return (
    `{"id":${JSON.stringify(c.id)},"object":"chat.completion","created":${num(c.created)},` +
    `"model":${JSON.stringify(c.model)},"choices":[{"index":0,"message":{"role":"assistant",` +
    `"content":${JSON.stringify(c.text)}},"finish_reason":${JSON.stringify(c.finishReason)}}],` +
    `"usage":{"prompt_tokens":${num(c.promptTokens)},"completion_tokens":${num(c.completionTokens)},` +
    `"total_tokens":${num(c.promptTokens + c.completionTokens)},"cost":${total}},` +
    `"meta":{"provider":${JSON.stringify(c.provider)},"cost":{"input":${num(input)},"output":${num(output)},` +
    `"total":${total}},"balance":${num(nanoToUsd(c.balanceNano))},"duration_ms":${num(c.durationMs)}}}`
  );
}

/** A number as JSON writes it. */
function num(n: number): string {
  return Number.isFinite(n) ? String(n) : 'null';
}
