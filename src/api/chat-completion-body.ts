import { nanoDecimal, nanoToUsd } from '../billing/money.js';
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
 * the nested object and walking it. The answer's text goes through `JSON.stringify`, the short strings
 * through `jsonString`; numbers are written as JSON writes them (`String` of a finite number, `null`
 * otherwise, as `JSON.stringify` does; dollar figures by `usdJson`).
 * `chatCompletionBody` stays the readable definition of the body.
 */
export function chatCompletionJson(c: ChatCompletion): string {
  const input = nanoToUsd(c.inputCostNano);
  const output = nanoToUsd(c.outputCostNano);
  // Spec §2.4 rule 1: total is input + output as JavaScript numbers. When that sum is also the correctly
  // rounded quotient of the summed nanodollars (nearly always), the two write the same text.
  const sumNano = c.inputCostNano + c.outputCostNano;
  const sum = input + output;
  const total = sum === nanoToUsd(sumNano) ? usdJson(sumNano) : num(sum);
  return (
    `{"id":${jsonString(c.id)},"object":"chat.completion","created":${num(c.created)},` +
    `"model":${jsonString(c.model)},"choices":[{"index":0,"message":{"role":"assistant",` +
    `"content":${JSON.stringify(c.text)}},"finish_reason":${jsonString(c.finishReason)}}],` +
    `"usage":{"prompt_tokens":${num(c.promptTokens)},"completion_tokens":${num(c.completionTokens)},` +
    `"total_tokens":${num(c.promptTokens + c.completionTokens)},"cost":${total}},` +
    `"meta":{"provider":${jsonString(c.provider)},"cost":{"input":${usdJson(c.inputCostNano)},` +
    `"output":${usdJson(c.outputCostNano)},"total":${total}},"balance":${usdJson(c.balanceNano)},` +
    `"duration_ms":${num(c.durationMs)}}}`
  );
}

/**
 * `JSON.stringify` of a short string: the id, the model, the finish reason and the provider, which are
 * printable ASCII without quotes or backslashes nearly always, and then are written between quotes as they
 * are (a native `JSON.stringify` call costs more than the loop for such strings: docs/performance.md,
 * twentieth round). Anything else — control characters, `"` or `\`, non-ASCII — goes to `JSON.stringify`.
 */
function jsonString(s: string): string {
  for (let i = 0; i < s.length; i++) {
    const code = s.charCodeAt(i);
    if (code < 0x20 || code > 0x7e || code === 0x22 || code === 0x5c) return JSON.stringify(s);
  }
  return `"${s}"`;
}

/** A number as JSON writes it. */
function num(n: number): string {
  return Number.isFinite(n) ? String(n) : 'null';
}

/**
 * `num(nanoToUsd(nano))`, the dollar figure as JSON writes it, made from the integer without V8's
 * shortest-round-trip conversion of a fraction (docs/performance.md, twentieth round). For a whole number
 * of nanodollars from 1000 (10^-6 USD: below it JavaScript writes an exponent) up to 10^15, the quotient's
 * exact decimal has at most 15 significant digits, and a decimal of at most 15 significant digits is the
 * shortest text that reads back as its double — the text `String` writes. So it is the nanodollars with the
 * point moved nine places and the trailing zeros dropped (`nanoDecimal`). Every other amount goes through
 * `num`.
 */
export function usdJson(nano: number): string {
  return nano >= 1000 && nano < 1e15 && Number.isInteger(nano) ? nanoDecimal(nano) : num(nanoToUsd(nano));
}
