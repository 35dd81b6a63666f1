/**
 * Images, audio and files in a prompt: how the simulator reads their bytes, what they cost in prompt tokens
 * and how the reply acknowledges them. The amounts are fixed and per item (the real upstreams count by
 * image size, audio length and document pages); the gateway holds more per image than these (its
 * `imageTokens` per provider), so a hold always covers what the simulator bills.
 *
 * @see https://platform.openai.com/docs/guides/images-vision#calculating-costs
 * @see https://docs.anthropic.com/en/docs/build-with-claude/vision#evaluate-image-size
 * @see https://ai.google.dev/gemini-api/docs/tokens#multimodal-tokens
 */
import type { WireFormat } from './types.js';

/**
 * Prompt tokens one image costs, whatever its size: OpenAI's 765 (a 1024×1024 high-detail image),
 * Anthropic's 1568 (its largest unresized image), Gemini's 258 (an image up to 384 px a side).
 */
export const IMAGE_TOKENS: Readonly<Record<WireFormat, number>> = Object.freeze({
  'openai-compatible': 765,
  anthropic: 1568,
  gemini: 258,
});

/** Prompt tokens per started 1,000 decoded bytes of audio. */
export const AUDIO_TOKENS_PER_KB = 32;

/** Decoded bytes of a file (PDF, text, …) per prompt token (rounded up). */
export const FILE_BYTES_PER_TOKEN = 4;

/** Prompt tokens of an audio clip of `bytes` decoded bytes: 32 per started 1,000 bytes. */
export function audioTokens(bytes: number): number {
  return Math.ceil(bytes / 1000) * AUDIO_TOKENS_PER_KB;
}

/** Prompt tokens of a file of `bytes` decoded bytes: one per 4 bytes, rounded up. */
export function fileTokens(bytes: number): number {
  return Math.ceil(bytes / FILE_BYTES_PER_TOKEN);
}

/** How many of each the prompt holds, and what they cost together. */
export interface MediaTally {
  images: number;
  audio: number;
  files: number;
  tokens: number;
}

export function emptyTally(): MediaTally {
  return { images: 0, audio: 0, files: 0, tokens: 0 };
}

export function addImage(tally: MediaTally, format: WireFormat): void {
  tally.images += 1;
  tally.tokens += IMAGE_TOKENS[format];
}

export function addAudio(tally: MediaTally, bytes: number): void {
  tally.audio += 1;
  tally.tokens += audioTokens(bytes);
}

/** A file whose bytes are unknown (an uploaded file's id, a URL) costs nothing beyond being counted. */
export function addFile(tally: MediaTally, bytes: number): void {
  tally.files += 1;
  tally.tokens += fileTokens(bytes);
}

function plural(count: number, one: string, many: string): string {
  return `${count} ${count === 1 ? one : many}`;
}

/**
 * What the reply says after the slug when the prompt held media: ` (saw 1 image, 2 audio clips, 1 file)`;
 * '' when it held none, so text-only replies are unchanged.
 */
export function mediaNote(tally: MediaTally): string {
  const seen: string[] = [];
  if (tally.images > 0) seen.push(plural(tally.images, 'image', 'images'));
  if (tally.audio > 0) seen.push(plural(tally.audio, 'audio clip', 'audio clips'));
  if (tally.files > 0) seen.push(plural(tally.files, 'file', 'files'));
  return seen.length === 0 ? '' : ` (saw ${seen.join(', ')})`;
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const BASE64_URL = /^[A-Za-z0-9_-]*$/;

/** Whether `data` is standard base64 (padded), or with `urlSafe` base64url too (Gemini takes both). */
export function isBase64(data: string, urlSafe = false): boolean {
  if (BASE64.test(data)) return true;
  return urlSafe && BASE64_URL.test(data) && data.length % 4 !== 1;
}

/** Decoded size of valid base64 (padded or not), without decoding it. */
export function base64Bytes(data: string): number {
  let length = data.length;
  while (length > 0 && data[length - 1] === '=') length--;
  return Math.floor((length * 3) / 4);
}

/** A `data:<media type>;base64,<data>` URL, split; null when `url` is not one. */
export function parseDataUrl(url: string): { mediaType: string; data: string } | null {
  const match = /^data:([a-z0-9.+-]+\/[a-z0-9.+-]+)(?:;[a-z0-9=.+-]+)*;base64,(.*)$/is.exec(url);
  if (!match) return null;
  return { mediaType: (match[1] as string).toLowerCase(), data: match[2] as string };
}

/** Whether `url` is an absolute http(s) URL. */
export function isHttpUrl(url: string): boolean {
  if (!/^https?:\/\//i.test(url)) return false;
  try {
    new URL(url);
    return true;
  } catch {
    return false;
  }
}
