/**
 * How a streamed string is cut into content pieces: about `count` pieces of near-equal length, each at
 * least one character, never splitting a character (a surrogate pair stays whole). The pieces joined are
 * the string, so a streamed answer assembles to the non-stream one.
 */
import { decodeGenerator, encode } from 'gpt-tokenizer/encoding/o200k_base';
import { type TokenLogprob, tokenLogprobs } from './logprobs.js';

/** `text` in `min(count, characters)` pieces; none for ''. */
export function slicePieces(text: string, count: number): string[] {
  if (text === '') return [];
  const chars = Array.from(text);
  const pieces = Math.max(1, Math.min(Math.floor(count), chars.length));
  const out: string[] = [];
  for (let i = 0; i < pieces; i++) {
    const from = Math.floor((i * chars.length) / pieces);
    const to = Math.floor(((i + 1) * chars.length) / pieces);
    out.push(chars.slice(from, to).join(''));
  }
  return out;
}

/**
 * Where each o200k token of `text` ends, in UTF-16 offsets. Decoding pulls one token at a time, so what it
 * yields after pulling a token ends where that token does; a token that ends inside a character ends, here,
 * where the character starts (the token after it completes the character).
 */
function tokenEnds(text: string): number[] {
  const ids = encode(text);
  const ends: number[] = [];
  let pulled = 0;
  function* pull(): Generator<number> {
    for (const id of ids) {
      pulled++;
      yield id;
    }
  }
  let offset = 0;
  for (const part of decodeGenerator(pull())) {
    // Tokens pulled without output so far end at the previous offset.
    while (ends.length < pulled - 1) ends.push(offset);
    offset += part.length;
    ends.push(Math.min(offset, text.length));
  }
  while (ends.length < ids.length) ends.push(text.length);
  return ends;
}

/**
 * The log probabilities of `text` (exactly those of the non-stream answer, `tokenLogprobs(text, top)`)
 * shared out over its pieces: each token goes with the piece it ends in. Joined, they are the whole list.
 */
export function pieceLogprobs(text: string, pieces: readonly string[], top: number): TokenLogprob[][] {
  const tokens = tokenLogprobs(text, top);
  const out: TokenLogprob[][] = pieces.map(() => []);
  if (pieces.length === 0) return out;
  const ends = tokenEnds(text);
  let piece = 0;
  let pieceEnd = (pieces[0] as string).length;
  tokens.forEach((token, i) => {
    const end = ends[i] ?? text.length;
    while (end > pieceEnd && piece < pieces.length - 1) {
      piece++;
      pieceEnd += (pieces[piece] as string).length;
    }
    (out[piece] as TokenLogprob[]).push(token);
  });
  return out;
}
