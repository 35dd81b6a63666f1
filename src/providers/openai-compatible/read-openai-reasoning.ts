import { isRecord } from '../json-value.js';
import type { ReasoningTally } from '../reasoning-tally.js';

/**
 * Adds the reasoning of an OpenAI-compatible message, or of a stream's delta, to `tally` under `key`
 * (the choice): DeepSeek's `reasoning_content`, or else `reasoning` (Groq, OpenRouter; vLLM may send both
 * with the same text); Mistral's `thinking` content parts (their text); and OpenRouter's encrypted
 * `reasoning_details` entries, by their size. None of it is part of the answer.
 *
 * @see https://api-docs.deepseek.com/guides/reasoning_model
 * @see https://console.groq.com/docs/reasoning
 * @see https://docs.mistral.ai/capabilities/reasoning/
 * @see https://openrouter.ai/docs/use-cases/reasoning-tokens
 */
export function readOpenAIReasoning(message: unknown, key: number, tally: ReasoningTally): void {
  if (!isRecord(message)) return;
  const { reasoning_content: named, reasoning, content, reasoning_details: details } = message;
  tally.text(key, typeof named === 'string' && named !== '' ? named : reasoning);
  if (Array.isArray(content)) {
    for (const part of content as unknown[]) {
      if (!isRecord(part) || part.type !== 'thinking') continue;
      const { thinking } = part;
      if (!Array.isArray(thinking)) tally.text(key, thinking);
      else for (const piece of thinking as unknown[]) if (isRecord(piece)) tally.text(key, piece.text);
    }
  }
  if (Array.isArray(details)) {
    for (const detail of details as unknown[]) {
      if (isRecord(detail) && detail.type === 'reasoning.encrypted') tally.opaque(detail.data);
    }
  }
}
