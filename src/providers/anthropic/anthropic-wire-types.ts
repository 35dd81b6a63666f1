/**
 * The parts of the Anthropic Messages request this adapter sends, as the API names them.
 *
 * @see https://docs.anthropic.com/en/api/messages
 * @see https://github.com/anthropics/anthropic-sdk-typescript/blob/main/src/resources/messages/messages.ts
 */

export interface AnthropicTextBlock {
  type: 'text';
  text: string;
}

/** @see https://docs.anthropic.com/en/docs/build-with-claude/vision */
export interface AnthropicImageBlock {
  type: 'image';
  source: { type: 'base64'; media_type: string; data: string } | { type: 'url'; url: string };
}

/** @see https://docs.anthropic.com/en/docs/build-with-claude/pdf-support */
export interface AnthropicDocumentBlock {
  type: 'document';
  source:
    | { type: 'base64'; media_type: 'application/pdf'; data: string }
    | { type: 'text'; media_type: 'text/plain'; data: string };
  title?: string;
}

/** @see https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use */
export interface AnthropicToolUseBlock {
  type: 'tool_use';
  id: string;
  name: string;
  input: Record<string, unknown>;
}

/** `content` is optional: a tool that returned nothing is sent without it (an empty text is refused). */
export interface AnthropicToolResultBlock {
  type: 'tool_result';
  tool_use_id: string;
  content?: string;
}

export type AnthropicContentBlock =
  | AnthropicTextBlock
  | AnthropicImageBlock
  | AnthropicDocumentBlock
  | AnthropicToolUseBlock
  | AnthropicToolResultBlock;

export interface AnthropicMessage {
  role: 'user' | 'assistant';
  /** A plain string is shorthand for one text block. */
  content: string | AnthropicContentBlock[];
}

/** @see https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use#specifying-client-tools */
export interface AnthropicTool {
  name: string;
  description?: string;
  input_schema: Record<string, unknown>;
  strict?: true;
}

/** @see https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use#forcing-tool-use */
export type AnthropicToolChoice =
  | { type: 'auto' | 'any'; disable_parallel_tool_use?: true }
  | { type: 'tool'; name: string; disable_parallel_tool_use?: true }
  | { type: 'none' };

/** @see https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking */
export interface AnthropicThinking {
  type: 'enabled';
  budget_tokens: number;
}
