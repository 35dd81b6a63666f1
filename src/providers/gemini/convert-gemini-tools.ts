import type { ToolChoice, ToolDefinition } from '../types.js';
import type { GeminiFunctionDeclaration, GeminiTool, GeminiToolConfig } from './gemini-wire-types.js';

export interface GeminiToolSetting {
  /** `tools`: one `Tool` holding every function; `undefined` when the call has no tools. */
  tools: GeminiTool[] | undefined;
  /** `toolConfig`; `undefined` when there are no tools or no `tool_choice`. */
  toolConfig: GeminiToolConfig | undefined;
  /** Tool settings Gemini has no field for, named as OpenAI names them. */
  dropped: string[];
}

/**
 * OpenAI's `tools`, `tool_choice` and `parallel_tool_calls` as Gemini's `tools` and `toolConfig`.
 *
 * Each function becomes a `functionDeclaration`; its JSON Schema goes, as it is, to
 * `parametersJsonSchema`, which takes plain JSON Schema (`parameters` would take only Gemini's
 * OpenAPI-subset `Schema`, which an OpenAI schema would have to be rewritten into, losing what that
 * subset lacks). `tool_choice`: `auto` → mode `AUTO`, `none` → `NONE`, `required` → `ANY`, a named
 * function → `ANY` limited to it by `allowedFunctionNames`. Without tools neither field is sent: there is
 * nothing to choose from.
 *
 * Gemini has no switch for parallel calls (the model may always make several) and no strict mode for a
 * function's arguments: `parallel_tool_calls: false` is reported as `parallel_tool_calls`, `strict: true`
 * as `tools[].function.strict`.
 *
 * @see https://ai.google.dev/api/caching#Tool
 * @see https://ai.google.dev/api/caching#FunctionDeclaration
 * @see https://ai.google.dev/api/caching#FunctionCallingConfig
 * @see https://ai.google.dev/gemini-api/docs/function-calling#function_calling_modes
 */
export function convertGeminiTools(
  tools: readonly ToolDefinition[] | undefined,
  toolChoice: ToolChoice | undefined,
  parallelToolCalls: boolean | undefined,
): GeminiToolSetting {
  const dropped: string[] = [];
  if (tools?.some((tool) => tool.strict === true)) dropped.push('tools[].function.strict');
  if (parallelToolCalls === false) dropped.push('parallel_tool_calls');
  if (tools === undefined || tools.length === 0) return { tools: undefined, toolConfig: undefined, dropped };
  return {
    tools: [{ functionDeclarations: tools.map(functionDeclaration) }],
    toolConfig: toolChoice === undefined ? undefined : { functionCallingConfig: callingConfig(toolChoice) },
    dropped,
  };
}

function functionDeclaration(tool: ToolDefinition): GeminiFunctionDeclaration {
  const declaration: GeminiFunctionDeclaration = { name: tool.name };
  if (tool.description !== undefined && tool.description !== '') declaration.description = tool.description;
  if (tool.parameters !== undefined) declaration.parametersJsonSchema = tool.parameters;
  return declaration;
}

function callingConfig(choice: ToolChoice): GeminiToolConfig['functionCallingConfig'] {
  switch (choice.type) {
    case 'auto':
      return { mode: 'AUTO' };
    case 'none':
      return { mode: 'NONE' };
    case 'required':
      return { mode: 'ANY' };
    case 'function':
      return { mode: 'ANY', allowedFunctionNames: [choice.name] };
  }
}
