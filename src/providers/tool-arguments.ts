import { MAX_JSON_DEPTH, nestsDeeperThan } from '../json-depth.js';
import { isRecord } from './json-value.js';

/**
 * A past tool call's `arguments` (JSON text as the model wrote it) as the object that Anthropic's
 * `tool_use.input` and Gemini's `functionCall.args` take (both a JSON object, never text). Empty or blank
 * text (a call without arguments) is `{}`; text that is not a JSON object, or one nested deeper than a
 * request body may be (`MAX_JSON_DEPTH`: the request is built with `JSON.stringify`, which such an object
 * would overflow), gives `undefined`, and those formats refuse the call: they have no way to carry it.
 *
 * @see https://docs.anthropic.com/en/api/messages#body-messages-content
 * @see https://ai.google.dev/api/caching#FunctionCall
 */
export function toolArgumentsObject(text: string): Record<string, unknown> | undefined {
  if (text.trim() === '') return {};
  try {
    const value = JSON.parse(text) as unknown;
    return isRecord(value) && !nestsDeeperThan(value, MAX_JSON_DEPTH) ? value : undefined;
  } catch {
    return undefined;
  }
}
