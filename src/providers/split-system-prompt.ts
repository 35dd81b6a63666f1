import type { ChatMessage } from './types.js';

export interface ConversationTurn {
  role: 'user' | 'assistant';
  content: string;
}

export interface SplitConversation {
  /** Every system message, wherever it stood, joined with a blank line; `undefined` when there is none. */
  system: string | undefined;
  /** The user/assistant turns in order, consecutive same-role messages merged (text joined by a blank line). */
  turns: ConversationTurn[];
}

/**
 * Shapes an OpenAI-style conversation for the wire formats that take the system prompt apart and want
 * strictly alternating turns (Anthropic Messages, Gemini generateContent). A conversation of system
 * messages only is sent as one user turn holding the system text, since both upstreams refuse an empty
 * turn list.
 */
export function splitSystemPrompt(messages: readonly ChatMessage[]): SplitConversation {
  const systemParts: string[] = [];
  const turns: ConversationTurn[] = [];
  for (const message of messages) {
    if (message.role === 'system') {
      systemParts.push(message.content);
      continue;
    }
    const last = turns[turns.length - 1];
    if (last !== undefined && last.role === message.role) {
      last.content = `${last.content}\n\n${message.content}`;
    } else {
      turns.push({ role: message.role, content: message.content });
    }
  }
  const system = systemParts.length === 0 ? undefined : systemParts.join('\n\n');
  if (turns.length === 0 && system !== undefined) {
    return { system: undefined, turns: [{ role: 'user', content: system }] };
  }
  return { system, turns };
}
