import { toolArgumentsObject } from '../tool-arguments.js';
import type { ChatMessage, ContentPart } from '../types.js';
import type {
  AnthropicContentBlock,
  AnthropicMessage,
  AnthropicToolResultBlock,
  AnthropicToolUseBlock,
} from './anthropic-wire-types.js';
import { convertAnthropicContentPart } from './convert-anthropic-content-part.js';

export type { AnthropicMessage } from './anthropic-wire-types.js';

export interface AnthropicPrompt {
  system: string | undefined;
  messages: AnthropicMessage[];
  /** Message fields Anthropic has no place for, named as OpenAI names them (each once). */
  dropped: string[];
}

/**
 * Shapes an OpenAI conversation for the Messages API:
 * - every `system` and `developer` message, wherever it stands, is joined (blank line between) into the
 *   top-level `system` string; a conversation of those only is sent as one user turn holding that text;
 * - user content: a string stays a string, parts become content blocks (`convertAnthropicContentPart`);
 * - an assistant message: its text (or, without text, its past `refusal`) then one `tool_use` block per
 *   tool call; without tool calls it stays a plain string;
 * - a `tool` message becomes a `tool_result` block in a user turn, so the results of parallel calls, and
 *   a user message after them, share the one user turn that follows the `tool_use` blocks, the results
 *   first (as Anthropic requires);
 * - consecutive same-role turns are merged (two strings joined by a blank line, otherwise the block
 *   lists concatenated); empty text is never sent (Anthropic refuses empty text blocks) and a turn left
 *   empty is dropped.
 * A conversation whose first turn is the assistant's is sent as it is: the Messages API takes it.
 * `name` (on any message but a tool result) has no Anthropic field: it is reported as `messages[].name`,
 * an image `detail` other than `auto` as `messages[].content[].image_url.detail`.
 *
 * @see https://docs.anthropic.com/en/api/messages#body-messages
 * @see https://docs.anthropic.com/en/api/messages#body-system
 * @see https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use#handling-tool-use-and-tool-result-content-blocks
 * @see https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use#parallel-tool-use
 */
export function convertToAnthropicMessages(messages: readonly ChatMessage[]): AnthropicPrompt {
  const systemParts: string[] = [];
  const turns: AnthropicMessage[] = [];
  const dropped = new Set<string>();
  for (const message of messages) {
    if (message.role !== 'tool' && message.name !== undefined) dropped.add('messages[].name');
    switch (message.role) {
      case 'system':
      case 'developer':
        if (message.content !== '') systemParts.push(message.content);
        break;
      case 'user':
        if (typeof message.content !== 'string' && message.content.some(hasDetail)) {
          dropped.add('messages[].content[].image_url.detail');
        }
        appendTurn(turns, 'user', userContent(message.content));
        break;
      case 'assistant':
        appendTurn(turns, 'assistant', assistantContent(message));
        break;
      case 'tool':
        appendTurn(turns, 'user', [toolResult(anthropicToolUseId(message.toolCallId), message.content)]);
        break;
    }
  }
  const system = systemParts.length === 0 ? undefined : systemParts.join('\n\n');
  if (turns.length === 0 && system !== undefined) {
    return { system: undefined, messages: [{ role: 'user', content: system }], dropped: [...dropped] };
  }
  return { system, messages: turns, dropped: [...dropped] };
}

type TurnContent = string | AnthropicContentBlock[];

function hasDetail(part: ContentPart): boolean {
  return part.type === 'image' && (part.detail === 'low' || part.detail === 'high');
}

function userContent(content: string | ContentPart[]): TurnContent {
  if (typeof content === 'string') return content;
  const blocks: AnthropicContentBlock[] = [];
  for (const part of content) {
    const block = convertAnthropicContentPart(part);
    if (block !== undefined) blocks.push(block);
  }
  return blocks;
}

function assistantContent(message: Extract<ChatMessage, { role: 'assistant' }>): TurnContent {
  let text = message.content ?? '';
  if (text === '' && message.refusal !== undefined) text = message.refusal;
  const calls = message.toolCalls ?? [];
  if (calls.length === 0) return text;
  const blocks: AnthropicContentBlock[] = text === '' ? [] : [{ type: 'text', text }];
  for (const call of calls) {
    const toolUse: AnthropicToolUseBlock = {
      type: 'tool_use',
      id: anthropicToolUseId(call.id),
      name: call.name,
      // Arguments that are not a JSON object are refused before the call (see `anthropicRefusal`).
      input: toolArgumentsObject(call.arguments) ?? {},
    };
    blocks.push(toolUse);
  }
  return blocks;
}

function toolResult(toolUseId: string, content: string): AnthropicToolResultBlock {
  return content === ''
    ? { type: 'tool_result', tool_use_id: toolUseId }
    : { type: 'tool_result', tool_use_id: toolUseId, content };
}

function appendTurn(turns: AnthropicMessage[], role: AnthropicMessage['role'], content: TurnContent): void {
  if (content.length === 0) return;
  const last = turns[turns.length - 1];
  if (last === undefined || last.role !== role) {
    turns.push({ role, content });
    return;
  }
  last.content =
    typeof last.content === 'string' && typeof content === 'string'
      ? `${last.content}\n\n${content}`
      : [...asBlocks(last.content), ...asBlocks(content)];
}

function asBlocks(content: TurnContent): AnthropicContentBlock[] {
  return typeof content === 'string' ? [{ type: 'text', text: content }] : content;
}

/**
 * A tool call id as Anthropic takes it (`^[a-zA-Z0-9_-]+$`): ids other upstreams made (Kimi writes
 * `functions.get_weather:0`) have every other character replaced by `_`, the same way on the call and on
 * its result, so the pair still matches.
 *
 * @see https://docs.anthropic.com/en/api/messages#body-messages-content (tool_use `id`)
 */
export function anthropicToolUseId(id: string): string {
  return id.replace(/[^a-zA-Z0-9_-]/g, '_');
}
