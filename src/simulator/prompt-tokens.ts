/**
 * The parts of the prompt-token rule beyond message text (`promptTokens` in `reply.ts`: o200k count of each
 * message's text + 4 per message + 3). A request also pays for:
 * - its tool definitions: the o200k count of `JSON.stringify` of the `tools` array as the request wrote it;
 * - each tool call of the history: the o200k count of its name plus that of its arguments (OpenAI: the
 *   `arguments` string as written; Anthropic / Gemini: `JSON.stringify` of `input` / `args`);
 * - each tool result: the o200k count of its text (OpenAI: the tool message's text; Anthropic: the
 *   `tool_result` content's text; Gemini: `JSON.stringify(response)`);
 * - its media (`media.ts`).
 * The same measure of a tool call counts the completion tokens of a call the simulator makes.
 */
import { tokenCount } from './reply.js';

/** Tokens of the tool definitions as written; 0 when there are none. */
export function toolsTokens(tools: unknown): number {
  if (!Array.isArray(tools) || tools.length === 0) return 0;
  return tokenCount(JSON.stringify(tools));
}

/** Tokens of one tool call: its name plus its arguments' JSON text. */
export function toolCallTokens(name: string, argumentsJson: string): number {
  return tokenCount(name) + tokenCount(argumentsJson);
}

/** Tokens of one tool result's text. */
export function toolResultTokens(text: string): number {
  return tokenCount(text);
}
