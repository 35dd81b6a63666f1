import { splitSystemPrompt } from '../split-system-prompt.js';
import type { ChatMessage } from '../types.js';

export interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: string;
}

export interface AnthropicPrompt {
  system: string | undefined;
  messages: AnthropicMessage[];
}

/**
 * Anthropic takes the system prompt as a top-level `system` string, not as a message, and wants user and
 * assistant turns to alternate: all system messages are joined into `system`, consecutive same-role
 * turns are merged, and a system-only conversation is sent as one user message.
 *
 * @see https://docs.anthropic.com/en/api/messages#body-messages
 * @see https://docs.anthropic.com/en/api/messages#body-system
 */
export function convertToAnthropicMessages(messages: readonly ChatMessage[]): AnthropicPrompt {
  const { system, turns } = splitSystemPrompt(messages);
  return { system, messages: turns.map((turn) => ({ role: turn.role, content: turn.content })) };
}
