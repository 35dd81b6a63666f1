import type { ChatCompletion } from '../gateway/types.js';
import { nanoToUsd } from '../money/money.js';
import type { ChoiceResult } from '../providers/types.js';

interface WireToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

interface WireMessage {
  role: 'assistant';
  content: string | null;
  refusal?: string;
  tool_calls?: WireToolCall[];
  /** Legacy form, when the caller asked with `functions`. */
  function_call?: { name: string; arguments: string };
}

interface WireChoice {
  index: number;
  message: WireMessage;
  logprobs?: Record<string, unknown> | null;
  finish_reason: string;
}

/** The `chat.completion` body of docs/api.md, with Tollgate's `meta`. */
export interface ChatCompletionBody {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: WireChoice[];
  /**
   * `cost` (USD) is where OpenRouter-style tooling looks for a call's cost: the amount charged, as its
   * own shortest decimal — the field to sum (docs/api.md).
   */
  usage: {
    prompt_tokens: number;
    completion_tokens: number;
    total_tokens: number;
    /** The parts of `prompt_tokens` read from and written to the upstream's cache, as far as it said. */
    prompt_tokens_details?: { cached_tokens?: number; cache_write_tokens?: number };
    completion_tokens_details?: { reasoning_tokens: number };
    cost: number;
  };
  meta: {
    provider: string;
    cost: { input: number; output: number; total: number };
    balance: number;
    duration_ms: number;
  };
}

function wireChoice(choice: ChoiceResult, index: number, c: ChatCompletion): WireChoice {
  const message: WireMessage = { role: 'assistant', content: choice.text };
  if (choice.refusal !== undefined) message.refusal = choice.refusal;
  let finish: string = choice.finishReason;
  const first = choice.toolCalls[0];
  if (c.legacyFunctions && first !== undefined) {
    // A legacy caller gets one call, as `functions` could only ever make one.
    message.function_call = { name: first.name, arguments: first.arguments };
    if (finish === 'tool_calls') finish = 'function_call';
  } else if (choice.toolCalls.length > 0) {
    message.tool_calls = choice.toolCalls.map((call) => ({
      id: call.id,
      type: 'function',
      function: { name: call.name, arguments: call.arguments },
    }));
  }
  const out: WireChoice = { index, message, finish_reason: finish };
  if (c.logprobs) out.logprobs = choice.logprobs ?? null;
  return out;
}

/** The `usage` and `meta` objects of a billed call (the body's, and a stream's final chunk's). */
export function billOf(c: ChatCompletion): Pick<ChatCompletionBody, 'usage' | 'meta'> {
  const input = nanoToUsd(c.inputCostNano);
  const output = nanoToUsd(c.outputCostNano);
  // docs/api.md: total is exactly input + output as JavaScript numbers, which may carry float noise
  // (0.0001354 as 0.00013539999999999998); `usage.cost` is the charge converted once from nanodollars,
  // so it prints as the exact decimal and sums to the balance's fall.
  const total = input + output;
  const usage: ChatCompletionBody['usage'] = {
    prompt_tokens: c.promptTokens,
    completion_tokens: c.completionTokens,
    total_tokens: c.promptTokens + c.completionTokens,
    cost: nanoToUsd(c.inputCostNano + c.outputCostNano),
  };
  if (c.cachedPromptTokens !== undefined || c.cacheWritePromptTokens !== undefined) {
    usage.prompt_tokens_details = {
      ...(c.cachedPromptTokens === undefined ? {} : { cached_tokens: c.cachedPromptTokens }),
      ...(c.cacheWritePromptTokens === undefined ? {} : { cache_write_tokens: c.cacheWritePromptTokens }),
    };
  }
  if (c.reasoningTokens !== undefined) {
    usage.completion_tokens_details = { reasoning_tokens: c.reasoningTokens };
  }
  return {
    usage,
    meta: {
      provider: c.provider,
      cost: { input, output, total },
      balance: nanoToUsd(c.balanceNano),
      duration_ms: c.durationMs,
    },
  };
}

export function chatCompletionBody(c: ChatCompletion): ChatCompletionBody {
  const { usage, meta } = billOf(c);
  return {
    id: c.id,
    object: 'chat.completion',
    created: c.created,
    model: c.model,
    choices: c.choices.map((choice, index) => wireChoice(choice, index, c)),
    usage,
    meta,
  };
}
