import type { ContentPart, ImageSource } from '../types.js';
import type { OpenAIContentPart, OpenAIFilePart, OpenAIImagePart } from './openai-wire-types.js';

/**
 * Writes the parts of a user message back as OpenAI content parts: `text`, `image_url` (inline images as a
 * `data:` URL, `detail` only when the caller gave one), `input_audio` and `file` (only the keys the caller
 * set). Keys whose value is absent are left out rather than sent as `null`.
 *
 * @see https://platform.openai.com/docs/api-reference/chat/create#chat-create-messages
 * @see https://platform.openai.com/docs/guides/images-vision
 * @see https://platform.openai.com/docs/guides/pdf-files
 */
export function convertToOpenAIContentParts(parts: readonly ContentPart[]): OpenAIContentPart[] {
  return parts.map(convertPart);
}

function convertPart(part: ContentPart): OpenAIContentPart {
  switch (part.type) {
    case 'text':
      return { type: 'text', text: part.text };
    case 'image':
      return imagePart(part.image, part.detail);
    case 'audio':
      return { type: 'input_audio', input_audio: { data: part.data, format: part.format } };
    case 'file':
      return filePart(part);
  }
}

function imagePart(image: ImageSource, detail: 'auto' | 'low' | 'high' | undefined): OpenAIImagePart {
  const url = image.kind === 'data' ? dataUrl(image.mediaType, image.data) : image.url;
  return { type: 'image_url', image_url: detail === undefined ? { url } : { url, detail } };
}

/**
 * Inline data goes as a `data:` URL when its media type is known; without one (the caller sent bare
 * base64) it goes as the caller wrote it.
 */
function filePart(part: Extract<ContentPart, { type: 'file' }>): OpenAIFilePart {
  const file: OpenAIFilePart['file'] = {};
  if (part.data !== undefined) {
    file.file_data = part.mediaType === undefined ? part.data : dataUrl(part.mediaType, part.data);
  }
  if (part.fileId !== undefined) file.file_id = part.fileId;
  if (part.filename !== undefined) file.filename = part.filename;
  return { type: 'file', file };
}

function dataUrl(mediaType: string, base64: string): string {
  return `data:${mediaType};base64,${base64}`;
}
