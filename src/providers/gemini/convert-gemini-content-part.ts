import type { ContentPart } from '../types.js';
import type { GeminiPart } from './gemini-wire-types.js';

/** The image types Gemini reads inline (no GIF). */
export const GEMINI_IMAGE_TYPES: ReadonlySet<string> = new Set([
  'image/png',
  'image/jpeg',
  'image/webp',
  'image/heic',
  'image/heif',
]);

/**
 * Why Gemini cannot take a user content part, as the end of a sentence starting "Gemini …", or
 * `undefined` when it can. An image by URL: the gateway never fetches a caller's URL, and `fileData`
 * takes only URIs of files uploaded to Google (Files API, Cloud Storage). A file by id: only an
 * OpenAI-compatible upstream can resolve it. An inline image of a type Gemini does not read (GIF), and
 * an inline file without a media type (Gemini's `inlineData` needs one).
 *
 * @see https://ai.google.dev/gemini-api/docs/image-understanding
 * @see https://ai.google.dev/api/caching#FileData
 * @see https://ai.google.dev/gemini-api/docs/document-processing
 */
export function unsupportedGeminiContentPart(part: ContentPart): string | undefined {
  switch (part.type) {
    case 'text':
    case 'audio':
      return undefined;
    case 'image':
      if (part.image.kind === 'url') {
        return 'does not take images by URL; send the image inline as a data: URL';
      }
      if (GEMINI_IMAGE_TYPES.has(part.image.mediaType)) return undefined;
      return `takes inline images as PNG, JPEG, WebP, HEIC or HEIF only, not ${part.image.mediaType}`;
    case 'file':
      if (part.data === undefined) return 'cannot read a file by id; send the file inline as file_data';
      if (part.mediaType === undefined || part.mediaType === '') {
        return 'needs the media type of an inline file; send file_data as a data: URL naming it';
      }
      return undefined;
  }
}

/**
 * One user content part as a Gemini `Part`: text → `{text}`; an inline image → `{inlineData}`; audio →
 * `{inlineData}` typed `audio/<format>` (`audio/wav`, `audio/mp3`); an inline file (a PDF, plain text,
 * or any other type Gemini reads) → `{inlineData}` typed by its data URL. Empty text and the parts
 * `unsupportedGeminiContentPart` names (refused before the call) give `undefined`. OpenAI's image
 * `detail` and a file's `filename` have no Gemini field: the caller reports them.
 *
 * @see https://ai.google.dev/api/caching#Part
 * @see https://ai.google.dev/gemini-api/docs/image-understanding
 * @see https://ai.google.dev/gemini-api/docs/audio
 * @see https://ai.google.dev/gemini-api/docs/document-processing
 */
export function convertGeminiContentPart(part: ContentPart): GeminiPart | undefined {
  if (unsupportedGeminiContentPart(part) !== undefined) return undefined;
  switch (part.type) {
    case 'text':
      return part.text === '' ? undefined : { text: part.text };
    case 'image':
      return part.image.kind === 'data'
        ? { inlineData: { mimeType: part.image.mediaType, data: part.image.data } }
        : undefined;
    case 'audio':
      return { inlineData: { mimeType: `audio/${part.format}`, data: part.data } };
    case 'file':
      return part.data === undefined || part.mediaType === undefined
        ? undefined
        : { inlineData: { mimeType: part.mediaType, data: part.data } };
  }
}
