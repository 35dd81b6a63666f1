import { badResponse, isRecord } from '../json-value.js';
import type { ToolCall } from '../types.js';
import { openaiToolCallId, type ToolCallPlace } from './openai-tool-call-id.js';

/** The answer a choice belongs to, as `openaiToolCallId` names it. */
export type ChoicePlace = Omit<ToolCallPlace, 'call'>;

/**
 * Reads the tool calls of one answer message: each `tool_calls[]` element's `id` and `function.name`, and
 * `function.arguments` as the model wrote it (an upstream that sends the arguments as a JSON object rather
 * than as JSON text has them serialised; one that leaves them out called a function without arguments,
 * `{}`). A message without tool calls that has the legacy `function_call` made that one call. A call
 * without an id gets one from `openaiToolCallId`.
 *
 * @see https://platform.openai.com/docs/api-reference/chat/object#chat/object-choices
 * @see https://platform.openai.com/docs/guides/function-calling
 */
export function readOpenAIToolCalls(message: Record<string, unknown>, place: ChoicePlace): ToolCall[] {
  const { tool_calls: toolCalls, function_call: functionCall } = message;
  if (toolCalls !== undefined && toolCalls !== null) {
    if (!Array.isArray(toolCalls)) throw badResponse('upstream message.tool_calls is not a list');
    if (toolCalls.length > 0) {
      return toolCalls.map((call: unknown, position) => {
        if (!isRecord(call)) throw badResponse('upstream tool call is not an object');
        const id = typeof call.id === 'string' && call.id !== '' ? call.id : undefined;
        return readFunction(call.function, id, { ...place, call: position });
      });
    }
  }
  if (functionCall === undefined || functionCall === null) return [];
  return [readFunction(functionCall, undefined, { ...place, call: 0 })];
}

function readFunction(fn: unknown, id: string | undefined, place: ToolCallPlace): ToolCall {
  if (!isRecord(fn) || typeof fn.name !== 'string' || fn.name === '') {
    throw badResponse('upstream tool call has no function name');
  }
  const args = readArguments(fn.arguments);
  return { id: id ?? openaiToolCallId(place, fn.name, args), name: fn.name, arguments: args };
}

function readArguments(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined || value === null) return '{}';
  return JSON.stringify(value);
}
