import { createHash } from 'node:crypto';

/** Where in which answer a tool call without an id was made. */
export interface ToolCallPlace {
  /** The answer's `id`, when the upstream sent one. */
  responseId: string | undefined;
  /** How many messages the request carried: tells apart the turns of one conversation. */
  turn: number;
  /** Position of the choice (after ordering by `index`). */
  choice: number;
  /** Position of the call in the choice's calls. */
  call: number;
}

/**
 * The id of a tool call an upstream made without one (some compatible servers leave `tool_calls[].id`
 * out; the legacy `function_call` never had one): `call_` and 24 hex digits of a SHA-256 of the answer's
 * `id`, the conversation's length, the choice and call positions, the function's name and its arguments.
 * As long as OpenAI's own ids; stable (the same answer to the same request gives the same ids), distinct
 * within an answer and between the turns of a conversation (the caller pairs its tool results with the
 * calls by id), and made of characters every wire format takes in an id.
 *
 * @see https://platform.openai.com/docs/api-reference/chat/object#chat/object-choices
 */
export function openaiToolCallId(place: ToolCallPlace, name: string, args: string): string {
  const key = JSON.stringify([place.responseId ?? '', place.turn, place.choice, place.call, name, args]);
  return `call_${createHash('sha256').update(key).digest('hex').slice(0, 24)}`;
}
