/**
 * The value Gemini's documentation gives for a `thoughtSignature` the client does not have: it tells the
 * API to skip validating the signature of that part.
 *
 * @see https://ai.google.dev/gemini-api/docs/thought-signatures#faqs
 */
export const SKIP_THOUGHT_SIGNATURE_VALIDATOR = 'skip_thought_signature_validator';

const GEMINI_GENERATION = /gemini-(\d+)/i;

/**
 * The `thoughtSignature` to send with a replayed `functionCall` part to `model`, or `undefined` for none.
 *
 * Gemini 3 models answer with a signature on their function calls and refuse (400) a later request whose
 * current turn replays those calls without it. An OpenAI conversation cannot carry the signature back (a
 * tool call is only an id, a name and arguments), so for Gemini 3 and later the adapter sends the
 * documented placeholder that skips the check, as the docs advise for history the client cannot sign
 * (calls made by another model, or by the client itself). Gemini 2.5 and earlier take calls without a
 * signature and get none. The generation is read off the model name (`gemini-3-flash-preview`,
 * `gemini-3.1-pro-preview`); a name without one (an alias such as `gemini-flash-latest`) gets none.
 *
 * @see https://ai.google.dev/gemini-api/docs/thought-signatures
 */
export function geminiThoughtSignature(model: string): string | undefined {
  const generation = GEMINI_GENERATION.exec(model);
  if (generation === null) return undefined;
  return Number(generation[1]) >= 3 ? SKIP_THOUGHT_SIGNATURE_VALIDATOR : undefined;
}
