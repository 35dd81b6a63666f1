import type { ChatMessage, ToolCall } from '../types.js';
import { convertToOpenAIContentParts } from './convert-to-openai-content-parts.js';
import type { OpenAIMessage, OpenAIToolCall } from './openai-wire-types.js';

/**
 * Writes the normalised conversation back as OpenAI messages, in order, one for one:
 *
 * - `system` → `system`. `developer` → `system` too: the catalog's OpenAI-compatible hosts (DeepSeek,
 *   Qwen, Kimi, Groq, Mistral) are not OpenAI, and not all of them know the `developer` role OpenAI added
 *   for its reasoning models; every one of them knows `system`, which OpenAI itself treats the same way.
 * - `user` → its text, or its parts as OpenAI content parts (`convertToOpenAIContentParts`).
 * - `assistant` → `content` (a string, or `null` beside tool calls), `tool_calls` as
 *   `{id, type: 'function', function: {name, arguments}}` (left out when there are none: OpenAI refuses an
 *   empty list), `refusal` only when set.
 * - `tool` → `{role: 'tool', tool_call_id, content}` (the wire format has no `name` on a tool message).
 *
 * `name` is passed on system, developer, user and assistant messages when the caller set it.
 *
 * @see https://platform.openai.com/docs/api-reference/chat/create#chat-create-messages
 * @see https://platform.openai.com/docs/guides/function-calling
 */
export function convertToOpenAIMessages(messages: readonly ChatMessage[]): OpenAIMessage[] {
  return messages.map(convertMessage);
}

function convertMessage(message: ChatMessage): OpenAIMessage {
  switch (message.role) {
    case 'system':
    case 'developer': {
      const out: Extract<OpenAIMessage, { role: 'system' }> = { role: 'system', content: message.content };
      if (message.name !== undefined) out.name = message.name;
      return out;
    }
    case 'user': {
      const out: Extract<OpenAIMessage, { role: 'user' }> = {
        role: 'user',
        content:
          typeof message.content === 'string'
            ? message.content
            : convertToOpenAIContentParts(message.content),
      };
      if (message.name !== undefined) out.name = message.name;
      return out;
    }
    case 'assistant': {
      const out: Extract<OpenAIMessage, { role: 'assistant' }> = {
        role: 'assistant',
        content: message.content,
      };
      if (message.name !== undefined) out.name = message.name;
      if (message.toolCalls !== undefined && message.toolCalls.length > 0) {
        out.tool_calls = message.toolCalls.map(convertToolCall);
      }
      if (message.refusal !== undefined) out.refusal = message.refusal;
      return out;
    }
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
  }
}

function convertToolCall(call: ToolCall): OpenAIToolCall {
  return { id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } };
}
