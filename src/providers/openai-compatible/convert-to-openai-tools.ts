import type { ToolChoice, ToolDefinition } from '../types.js';
import type { OpenAITool, OpenAIToolChoice } from './openai-wire-types.js';

/**
 * Writes the caller's functions as OpenAI `tools`: `{type: 'function', function: {name, description,
 * parameters, strict}}`, each optional key only when the caller set it.
 *
 * @see https://platform.openai.com/docs/api-reference/chat/create#chat-create-tools
 * @see https://platform.openai.com/docs/guides/function-calling#defining-functions
 */
export function convertToOpenAITools(tools: readonly ToolDefinition[]): OpenAITool[] {
  return tools.map((tool) => {
    const fn: OpenAITool['function'] = { name: tool.name };
    if (tool.description !== undefined) fn.description = tool.description;
    if (tool.parameters !== undefined) fn.parameters = tool.parameters;
    if (tool.strict !== undefined) fn.strict = tool.strict;
    return { type: 'function', function: fn };
  });
}

/**
 * Writes `tool_choice` as OpenAI spells it: `auto`, `none` and `required` as strings, a forced function
 * as `{type: 'function', function: {name}}`.
 *
 * @see https://platform.openai.com/docs/api-reference/chat/create#chat-create-tool_choice
 */
export function convertToOpenAIToolChoice(choice: ToolChoice): OpenAIToolChoice {
  return choice.type === 'function' ? { type: 'function', function: { name: choice.name } } : choice.type;
}
