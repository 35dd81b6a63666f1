import type { ReasoningEffort } from '../types.js';

/** Thinking budget (tokens) of each reasoning effort; 0 turns thinking off. */
export const GEMINI_THINKING_BUDGETS: Readonly<Record<ReasoningEffort, number>> = Object.freeze({
  none: 0,
  minimal: 0,
  low: 1024,
  medium: 8192,
  high: 24_576,
  // 24576 is the largest budget Gemini 2.5 Flash takes.
  xhigh: 24_576,
});

/**
 * OpenAI's `reasoning_effort` as Gemini's `thinkingConfig.thinkingBudget`: `none` and `minimal` → 0
 * (thinking off), `low` → 1024, `medium` → 8192, `high` and `xhigh` → 24576 tokens. Thinking tokens count
 * towards `maxOutputTokens`, so a budget is clamped to `maxTokens − 1`, leaving room for the answer.
 * `undefined` (no effort asked for) leaves the model's own default (dynamic thinking).
 *
 * @see https://ai.google.dev/gemini-api/docs/thinking#set-budget
 * @see https://ai.google.dev/api/generate-content#ThinkingConfig
 */
export function geminiThinkingBudget(
  effort: ReasoningEffort | undefined,
  maxTokens: number,
): number | undefined {
  if (effort === undefined) return undefined;
  return Math.max(0, Math.min(GEMINI_THINKING_BUDGETS[effort], maxTokens - 1));
}
