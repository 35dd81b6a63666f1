import type { ResponseFormat, ToolChoice, ToolDefinition } from '../types.js';
import type { AnthropicTool, AnthropicToolChoice } from './anthropic-wire-types.js';
import { JSON_OBJECT_TOOL, JSON_OBJECT_TOOL_NAME } from './json-object-tool.js';

export interface AnthropicToolFields {
  tools?: AnthropicTool[];
  tool_choice?: AnthropicToolChoice;
}

/**
 * OpenAI's `tools`, `tool_choice` and `parallel_tool_calls` as Anthropic's `tools` and `tool_choice`:
 * each function becomes `{name, description, input_schema}` (`parameters`, or an empty object schema
 * when it has none; `strict` only when true); `auto` → `auto`, `required` → `any`, a named function →
 * `tool`, `none` → `none`; `parallel_tool_calls: false` → `disable_parallel_tool_use: true` (on `auto`
 * when no `tool_choice` was given). Without tools nothing is sent. `response_format: json_object` adds
 * the forced `JSON_OBJECT_TOOL` (one call only).
 *
 * @see https://docs.anthropic.com/en/api/messages#body-tools
 * @see https://docs.anthropic.com/en/api/messages#body-tool-choice
 * @see https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use#forcing-tool-use
 * @see https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use#parallel-tool-use
 */
export function convertAnthropicTools(
  tools: readonly ToolDefinition[] | undefined,
  toolChoice: ToolChoice | undefined,
  parallelToolCalls: boolean | undefined,
  responseFormat: ResponseFormat | undefined,
): AnthropicToolFields {
  const converted = (tools ?? []).map(convertTool);
  if (responseFormat?.type === 'json_object') {
    return {
      tools: [...converted, { ...JSON_OBJECT_TOOL }],
      tool_choice: { type: 'tool', name: JSON_OBJECT_TOOL_NAME, disable_parallel_tool_use: true },
    };
  }
  if (converted.length === 0) return {};
  const choice = convertToolChoice(toolChoice, parallelToolCalls === false);
  return choice === undefined ? { tools: converted } : { tools: converted, tool_choice: choice };
}

function convertTool(tool: ToolDefinition): AnthropicTool {
  const converted: AnthropicTool = {
    name: tool.name,
    ...(tool.description === undefined ? {} : { description: tool.description }),
    input_schema: tool.parameters ?? { type: 'object', properties: {} },
  };
  if (tool.strict === true) converted.strict = true;
  return converted;
}

function convertToolChoice(
  choice: ToolChoice | undefined,
  oneCall: boolean,
): AnthropicToolChoice | undefined {
  const single = oneCall ? { disable_parallel_tool_use: true as const } : {};
  switch (choice?.type) {
    case undefined:
      return oneCall ? { type: 'auto', ...single } : undefined;
    case 'auto':
      return { type: 'auto', ...single };
    case 'required':
      return { type: 'any', ...single };
    case 'function':
      return { type: 'tool', name: choice.name, ...single };
    case 'none':
      return { type: 'none' };
  }
}
