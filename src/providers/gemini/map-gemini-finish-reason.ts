import type { FinishReason } from '../types.js';

/**
 * Maps a Gemini candidate `finishReason` onto ours: the safety-style blocks are content filtering,
 * `MAX_TOKENS` is length, and everything else (`STOP`, `OTHER`, `LANGUAGE`, unknown, missing) is `stop`.
 *
 * @see https://ai.google.dev/api/generate-content#FinishReason
 */
export function mapGeminiFinishReason(finishReason: unknown): FinishReason {
  switch (finishReason) {
    case 'MAX_TOKENS':
      return 'length';
    case 'SAFETY':
    case 'RECITATION':
    case 'BLOCKLIST':
    case 'PROHIBITED_CONTENT':
    case 'SPII':
    case 'IMAGE_SAFETY':
      return 'content_filter';
    default:
      return 'stop';
  }
}
