import { createHash } from 'node:crypto';

/** What a generated tool call id is derived from. */
export interface ToolCallIdSource {
  /** `responseId` of the answer, when Gemini sent one. */
  responseId: string | undefined;
  /** `modelVersion` of the answer, when Gemini sent one. */
  modelVersion: string | undefined;
  /** How many messages the request carried: tells apart the turns of one conversation. */
  turn: number;
  /** Position of the candidate (after ordering by `index`). */
  candidate: number;
  /** Position of the `functionCall` part in the candidate's parts. */
  part: number;
  name: string;
  /** The call's arguments as JSON text. */
  arguments: string;
}

/**
 * The id of a tool call Gemini made without one (the Gemini API's `FunctionCall.id` is optional and
 * most models leave it out): `call_` and 24 hex digits of a SHA-256 of the answer's `responseId` and
 * `modelVersion`, the conversation's length, the candidate and part positions, the function's name and
 * its arguments. Stable (the same answer to the same request gives the same ids) and unique within an
 * answer; made of characters every wire format takes in an id.
 *
 * @see https://ai.google.dev/api/caching#FunctionCall
 * @see https://platform.openai.com/docs/api-reference/chat/object#chat/object-choices
 */
export function geminiToolCallId(source: ToolCallIdSource): string {
  const key = JSON.stringify([
    source.responseId ?? '',
    source.modelVersion ?? '',
    source.turn,
    source.candidate,
    source.part,
    source.name,
    source.arguments,
  ]);
  return `call_${createHash('sha256').update(key).digest('hex').slice(0, 24)}`;
}
