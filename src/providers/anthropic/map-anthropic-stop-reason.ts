import type { FinishReason } from '../types.js';

/**
 * Maps an Anthropic `stop_reason` onto ours. `pause_turn` (a long server-tool turn paused) still ends our
 * non-streaming call with what was said; an unknown or missing reason counts as `stop`.
 *
 * @see https://docs.anthropic.com/en/api/messages#response-stop-reason
 * @see https://docs.anthropic.com/en/docs/build-with-claude/handling-stop-reasons
 */
export function mapAnthropicStopReason(stopReason: unknown): FinishReason {
  switch (stopReason) {
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'refusal':
      return 'content_filter';
    case 'tool_use':
      return 'tool_calls';
    default:
      return 'stop';
  }
}
