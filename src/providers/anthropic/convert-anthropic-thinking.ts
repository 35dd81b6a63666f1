import type { ReasoningEffort } from '../types.js';
import type { AnthropicMessage, AnthropicThinking } from './anthropic-wire-types.js';

/** The smallest thinking budget Anthropic accepts. */
export const MIN_THINKING_BUDGET = 1024;

/** Thinking budget (tokens) of each reasoning effort that turns thinking on. */
export const THINKING_BUDGETS: Readonly<Record<'low' | 'medium' | 'high' | 'xhigh', number>> = Object.freeze({
  low: 1024,
  medium: 4096,
  high: 16_384,
  xhigh: 32_768,
});

/**
 * Whether a reasoning effort asks for extended thinking (`low` … `xhigh`; `none` and `minimal` do not).
 * What `anthropicRefusal` checks: with thinking Anthropic allows neither a forced tool nor `tool_choice`
 * `any`.
 *
 * @see https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking#extended-thinking-with-tool-use
 */
export function enablesThinking(
  effort: ReasoningEffort | undefined,
): effort is keyof typeof THINKING_BUDGETS {
  return effort !== undefined && Object.hasOwn(THINKING_BUDGETS, effort);
}

export interface ThinkingSetting {
  /** The `thinking` field to send; `undefined` when thinking stays off. */
  thinking: AnthropicThinking | undefined;
  /** Thinking was asked for but cannot be turned on: `reasoning_effort` is reported as dropped. */
  dropped: boolean;
}

/**
 * OpenAI's `reasoning_effort` as Anthropic's `thinking: {type: "enabled", budget_tokens}`: `low` 1024,
 * `medium` 4096, `high` 16384, `xhigh` 32768 tokens, each clamped below `max_tokens` (the budget counts
 * towards it and must be smaller). Thinking cannot be turned on, and the effort is dropped, when
 * `max_tokens` leaves no room for the minimum budget of 1024 tokens, or when the last assistant turn made
 * tool calls: Anthropic then wants that turn to start with the thinking block it was answered with,
 * which an OpenAI conversation does not carry.
 *
 * @see https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking#how-to-use-extended-thinking
 * @see https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking#preserving-thinking-blocks
 */
export function convertAnthropicThinking(
  effort: ReasoningEffort | undefined,
  maxTokens: number,
  messages: readonly AnthropicMessage[],
): ThinkingSetting {
  if (!enablesThinking(effort)) return { thinking: undefined, dropped: false };
  const budget = Math.min(THINKING_BUDGETS[effort], maxTokens - 1);
  if (budget < MIN_THINKING_BUDGET || lastAssistantTurnUsedTools(messages)) {
    return { thinking: undefined, dropped: true };
  }
  return { thinking: { type: 'enabled', budget_tokens: budget }, dropped: false };
}

function lastAssistantTurnUsedTools(messages: readonly AnthropicMessage[]): boolean {
  const last = messages.findLast((message) => message.role === 'assistant');
  return (
    last !== undefined &&
    typeof last.content !== 'string' &&
    last.content.some((block) => block.type === 'tool_use')
  );
}
