/**
 * Deterministic log probabilities of a reply: one entry per o200k token of its text, each with a negative
 * log probability derived from the token and its position, and alternatives drawn from a fixed list. Both
 * OpenAI's `choices[].logprobs` and Gemini's `logprobsResult` are built from these.
 *
 * @see https://platform.openai.com/docs/api-reference/chat/object#chat/object-choices-logprobs
 * @see https://ai.google.dev/api/generate-content#LogprobsResult
 */
import { decode, encode } from 'gpt-tokenizer/encoding/o200k_base';
import { textHash } from './reply.js';

export interface TokenAlternative {
  token: string;
  tokenId: number;
  logprob: number;
}

export interface TokenLogprob extends TokenAlternative {
  /** The most likely tokens at this position, the chosen one first (as many as asked for). */
  top: TokenAlternative[];
}

/** The tokens offered as alternatives, in order (those equal to the chosen token are skipped). */
const ALTERNATIVES = [
  ' the',
  ' a',
  ' and',
  ' of',
  ' to',
  ' in',
  ' is',
  ' it',
  ' that',
  ' for',
  ' on',
  ' with',
  ' as',
  ' was',
  ' at',
  ' by',
  ' this',
  ' from',
  ' or',
  ' an',
  ' be',
];

const ALTERNATIVE_IDS = ALTERNATIVES.map((token) => encode(token)[0] as number);

/** A log probability in [-0.4, -0.0001], from the token and its position. */
function chosenLogprob(token: string, position: number): number {
  return -(1 + (textHash(`${position}:${token}`) % 4000)) / 10000;
}

/**
 * Log probabilities of every token of `text`, with `top` alternatives each (0–20): the chosen token first,
 * then tokens of a fixed list, each less likely than the one before. A token that splits a character
 * decodes to U+FFFD.
 */
export function tokenLogprobs(text: string, top: number): TokenLogprob[] {
  const ids = encode(text);
  return ids.map((tokenId, position) => {
    const token = decode([tokenId]);
    const logprob = chosenLogprob(token, position);
    const alternatives: TokenAlternative[] = top > 0 ? [{ token, tokenId, logprob }] : [];
    for (let i = 0; alternatives.length < top && i < ALTERNATIVES.length; i++) {
      const alt = ALTERNATIVES[i] as string;
      if (alt === token) continue;
      alternatives.push({
        token: alt,
        tokenId: ALTERNATIVE_IDS[i] as number,
        logprob: Math.round((logprob - 1.5 - alternatives.length * 0.75) * 10000) / 10000,
      });
    }
    return { token, tokenId, logprob, top: alternatives };
  });
}

/** UTF-8 bytes of a token, as OpenAI's `bytes` lists them. */
export function tokenBytes(token: string): number[] {
  return Array.from(Buffer.from(token, 'utf8'));
}
