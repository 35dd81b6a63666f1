import { countTokens, decode, encode } from 'gpt-tokenizer/encoding/o200k_base';

/** How generation ended, before mapping to a format's own finish reason. */
export type Finish = 'stop' | 'length' | 'stop_sequence';

export interface Reply {
  text: string;
  finish: Finish;
  /** The stop sequence that ended the text, when `finish` is `stop_sequence`. */
  stopSequence: string | null;
  /** o200k token count of `text` (never above the cap). */
  completionTokens: number;
}

/** Cap used when the request gives none. */
export const DEFAULT_CAP = 4096;

/** Filler words of the usual reply, unless the simulator is set to write more (or fewer). */
export const REPLY_WORDS = 40;

const FILLER = [
  'the',
  'quiet',
  'harbor',
  'keeps',
  'its',
  'lanterns',
  'burning',
  'while',
  'patient',
  'ships',
  'wait',
  'for',
  'morning',
  'tides',
  'and',
  'distant',
  'bells',
  'count',
  'slow',
  'hours',
  'across',
  'green',
  'hills',
  'where',
  'gentle',
  'rivers',
  'carry',
  'stories',
  'toward',
  'open',
  'water',
];

/** o200k token count of one text. */
export function tokenCount(text: string): number {
  return countTokens(text);
}

/** Prompt tokens: o200k count of every message's text (system included) + 4 per message + 3. */
export function promptTokens(messageTexts: readonly string[]): number {
  let total = 3;
  for (const text of messageTexts) total += countTokens(text) + 4;
  return total;
}

/** FNV-1a hash of a text (32 bits): the simulator's one source of deterministic variety. */
export function textHash(text: string): number {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 16777619);
  }
  return h >>> 0;
}

/**
 * The full (untruncated) deterministic reply: the slug, the first words of the last user message, then
 * `words` (40) filler words chosen from the prompt — with 40, always more than 40 tokens and 200
 * characters, and short enough (< ~90 tokens) that ordinary caps are not reached. `note` (e.g.
 * ` (saw 1 image)`, see `mediaNote`) follows the slug; the filler does not depend on it.
 */
export function fullReplyText(slug: string, lastUserText: string, note = '', words = REPLY_WORDS): string {
  const opening = lastUserText
    .split(/\s+/)
    .filter((w) => w.length > 0)
    .slice(0, 8)
    .map((w) => w.slice(0, 24));
  const seed = textHash(`${slug}\n${lastUserText}`);
  const filler: string[] = [];
  for (let i = 0; i < words; i++) filler.push(FILLER[(seed + i * 7) % FILLER.length] as string);
  return `Simulated reply from ${slug}${note} to: ${opening.join(' ')} … ${filler.join(' ')}.`;
}

/** Replies already composed, by their inputs (short prompts only), oldest first. */
const composed = new Map<string, Readonly<Reply>>();
/** Entries kept; past it the oldest goes. */
const COMPOSED_MAX = 512;
/** Longer last messages are composed every time (a key that size would hold on to the prompt). */
const COMPOSED_MAX_TEXT = 1024;

/**
 * The reply as returned: cut at the first stop sequence found, then truncated to `cap` tokens
 * (encode → slice → decode). A pure function of its arguments, so the replies to short prompts are kept
 * (512 at most): composing one tokenizes it, a large share of the simulator's CPU per request, which in
 * the benchmark shares a core with the load generator.
 */
export function composeReply(
  slug: string,
  lastUserText: string,
  cap: number,
  stops: readonly string[],
  words = REPLY_WORDS,
): Readonly<Reply> {
  if (lastUserText.length > COMPOSED_MAX_TEXT) return composeReplyNow(slug, lastUserText, cap, stops, words);
  // String(cap): JSON writes NaN and ±Infinity alike as null.
  const key = JSON.stringify([slug, String(cap), stops, lastUserText, words]);
  const known = composed.get(key);
  if (known) return known;
  const reply = Object.freeze(composeReplyNow(slug, lastUserText, cap, stops, words));
  if (composed.size >= COMPOSED_MAX) composed.delete(composed.keys().next().value as string);
  composed.set(key, reply);
  return reply;
}

/** How many replies are kept (for the tests of the bound). */
export function composedReplies(): number {
  return composed.size;
}

/** `composeReply` without the memo. */
export function composeReplyNow(
  slug: string,
  lastUserText: string,
  cap: number,
  stops: readonly string[],
  words = REPLY_WORDS,
): Reply {
  return cutReply(fullReplyText(slug, lastUserText, '', words), cap, stops);
}

/**
 * Any text as a reply: cut at the first stop sequence found (the earliest; empty sequences are ignored),
 * then truncated to `cap` tokens (encode → slice → decode). `cap` may be 0 (all of it went to reasoning):
 * the text is then empty and the finish `length`, unless it was empty already.
 */
export function cutReply(full: string, cap: number, stops: readonly string[]): Reply {
  let text = full;
  let stopSequence: string | null = null;
  let cut = text.length;
  for (const stop of stops) {
    if (stop.length === 0) continue;
    const at = text.indexOf(stop);
    if (at !== -1 && at < cut) {
      cut = at;
      stopSequence = stop;
    }
  }
  text = text.slice(0, cut);
  const tokens = encode(text);
  if (tokens.length > cap) {
    const truncated = decode(tokens.slice(0, Math.max(0, cap)));
    return {
      text: truncated,
      finish: 'length',
      stopSequence: null,
      completionTokens: Math.min(countTokens(truncated), Math.max(0, cap)),
    };
  }
  return {
    text,
    finish: stopSequence === null ? 'stop' : 'stop_sequence',
    stopSequence,
    completionTokens: tokens.length,
  };
}
