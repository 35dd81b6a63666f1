import type { FinishReason } from '../types.js';

/**
 * Maps a Gemini candidate `finishReason` onto ours: the safety-style blocks (text and image) are content
 * filtering, `MAX_TOKENS` is length, and everything else is `stop`: `STOP`, `LANGUAGE`, `OTHER`, the
 * function-calling failures (`MALFORMED_FUNCTION_CALL`, `UNEXPECTED_TOOL_CALL`, `TOO_MANY_TOOL_CALLS`:
 * the model stopped without a usable call), `NO_IMAGE`, `IMAGE_OTHER`, unknown and missing. A candidate
 * that made function calls and stopped (Gemini says `STOP`) is `tool_calls`: see `geminiChoiceFinishReason`.
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
    case 'IMAGE_PROHIBITED_CONTENT':
    case 'IMAGE_RECITATION':
      return 'content_filter';
    default:
      return 'stop';
  }
}

/**
 * The finish reason of a candidate: `mapGeminiFinishReason`'s, except that one that made function calls
 * and stopped is `tool_calls` (Gemini says `STOP`); calls cut by the token limit stay `length`, blocked
 * ones `content_filter`.
 *
 * @see https://ai.google.dev/gemini-api/docs/function-calling#how-it-works
 */
export function geminiChoiceFinishReason(finishReason: unknown, madeCalls: boolean): FinishReason {
  const mapped = mapGeminiFinishReason(finishReason);
  return madeCalls && mapped === 'stop' ? 'tool_calls' : mapped;
}
