import type { AnthropicTool } from './anthropic-wire-types.js';

/**
 * The tool that stands for OpenAI's `response_format: {type: "json_object"}`: Anthropic has no JSON
 * mode, so the model is made to call this tool and its `input` is the answer. The name cannot clash
 * with a caller's tool: `json_object` together with tools is refused.
 *
 * @see https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use#json-mode
 */
export const JSON_OBJECT_TOOL_NAME = 'json_object';

/** @see https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use#json-mode */
export const JSON_OBJECT_TOOL: Readonly<AnthropicTool> = Object.freeze({
  name: JSON_OBJECT_TOOL_NAME,
  description: 'Respond with a JSON object.',
  input_schema: Object.freeze({ type: 'object' }),
});
