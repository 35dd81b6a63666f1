import { isRecord } from '../json-value.js';
import type { ReasoningTally } from '../reasoning-tally.js';

/**
 * Adds a part's thinking to `tally` under `key` (the candidate): the text of a thought summary
 * (`thought: true`), and the size of a `thoughtSignature` (which any part may carry). Gemini bills its
 * thinking as output; none of it is part of the answer.
 *
 * @see https://ai.google.dev/gemini-api/docs/thinking#summaries
 * @see https://ai.google.dev/gemini-api/docs/thought-signatures
 */
export function readGeminiThought(part: unknown, key: number, tally: ReasoningTally): void {
  if (!isRecord(part)) return;
  if (part.thought === true) tally.text(key, part.text);
  tally.opaque(part.thoughtSignature);
}
