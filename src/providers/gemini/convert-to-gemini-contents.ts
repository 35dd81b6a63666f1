import { splitSystemPrompt } from '../split-system-prompt.js';
import type { ChatMessage } from '../types.js';

export interface GeminiContent {
  role: 'user' | 'model';
  parts: { text: string }[];
}

export interface GeminiPrompt {
  systemInstruction: { parts: { text: string }[] } | undefined;
  contents: GeminiContent[];
}

/**
 * Gemini takes the system prompt as `systemInstruction`, calls the assistant `model`, and wants turns to
 * alternate: all system messages are joined into the instruction, consecutive same-role turns merged,
 * and a system-only conversation is sent as one user turn.
 *
 * @see https://ai.google.dev/api/generate-content#request-body
 * @see https://ai.google.dev/api/caching#Content
 */
export function convertToGeminiContents(messages: readonly ChatMessage[]): GeminiPrompt {
  const { system, turns } = splitSystemPrompt(messages);
  return {
    systemInstruction: system === undefined ? undefined : { parts: [{ text: system }] },
    contents: turns.map((turn) => ({
      role: turn.role === 'assistant' ? 'model' : 'user',
      parts: [{ text: turn.content }],
    })),
  };
}
