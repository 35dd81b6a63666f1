import { badResponse, isRecord } from '../json-value.js';
import type { ToolCall } from '../types.js';
import { geminiToolCallId, type ToolCallIdSource } from './gemini-tool-call-id.js';

/** Where a `functionCall` part stands, for the id of a call Gemini sent without one. */
export type FunctionCallPlace = Omit<ToolCallIdSource, 'name' | 'arguments'>;

/**
 * One `functionCall` part as a tool call: `arguments` the JSON text of `args` (`{}` when absent), `id`
 * Gemini's own when it sends one, otherwise generated (`geminiToolCallId`). A call without a name, or
 * whose `args` is not an object, makes the answer unreadable.
 *
 * @see https://ai.google.dev/api/caching#FunctionCall
 */
export function readGeminiFunctionCall(call: unknown, place: FunctionCallPlace): ToolCall {
  if (!isRecord(call) || typeof call.name !== 'string' || call.name === '') {
    throw badResponse('upstream functionCall has no name');
  }
  const args = call.args ?? {};
  if (!isRecord(args)) throw badResponse('upstream functionCall args is not an object');
  const name = call.name;
  const argumentsText = JSON.stringify(args);
  const id =
    typeof call.id === 'string' && call.id !== ''
      ? call.id
      : geminiToolCallId({ ...place, name, arguments: argumentsText });
  return { id, name, arguments: argumentsText };
}
