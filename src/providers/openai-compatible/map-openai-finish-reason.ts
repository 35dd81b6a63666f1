import type { FinishReason } from '../types.js';

/**
 * Maps an OpenAI-compatible `finish_reason` onto ours. The legacy `function_call` is a tool call; an
 * unknown or missing reason (some compatible upstreams send `null` or their own words) counts as `stop`.
 *
 * @see https://platform.openai.com/docs/api-reference/chat/object#chat/object-choices
 */
export function mapOpenAIFinishReason(finishReason: unknown): FinishReason {
  switch (finishReason) {
    case 'length':
      return 'length';
    case 'content_filter':
      return 'content_filter';
    case 'tool_calls':
    case 'function_call':
      return 'tool_calls';
    default:
      return 'stop';
  }
}
