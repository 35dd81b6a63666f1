import type { ContentPart } from '../types.js';
import type { AnthropicContentBlock } from './anthropic-wire-types.js';

/** The image types Anthropic takes inline. */
export const ANTHROPIC_IMAGE_TYPES: ReadonlySet<string> = new Set([
  'image/jpeg',
  'image/png',
  'image/gif',
  'image/webp',
]);

/** The file types Anthropic takes inline as a `document` block. */
export const ANTHROPIC_DOCUMENT_TYPES: ReadonlySet<string> = new Set(['application/pdf', 'text/plain']);

/**
 * Why Anthropic cannot take a user content part, or `undefined` when it can: audio (Anthropic has no
 * audio input), a file by id (only an OpenAI-compatible upstream can resolve it), a file that is not a
 * PDF or plain text, an inline image of a type Anthropic does not read. An image by URL is fine:
 * Anthropic fetches it itself.
 *
 * @see https://docs.anthropic.com/en/docs/build-with-claude/vision
 * @see https://docs.anthropic.com/en/docs/build-with-claude/pdf-support
 */
export function unsupportedContentPart(part: ContentPart): string | undefined {
  switch (part.type) {
    case 'text':
      return undefined;
    case 'image':
      if (part.image.kind === 'url' || ANTHROPIC_IMAGE_TYPES.has(part.image.mediaType)) return undefined;
      return `takes inline images as JPEG, PNG, GIF or WebP only, not ${part.image.mediaType}`;
    case 'audio':
      return 'cannot take audio input';
    case 'file':
      if (part.data === undefined) return 'cannot read a file by id; send the file inline as file_data';
      if (part.mediaType !== undefined && ANTHROPIC_DOCUMENT_TYPES.has(part.mediaType)) return undefined;
      return `takes files as PDF (application/pdf) or plain text (text/plain) only, not ${part.mediaType ?? 'an untyped file'}`;
  }
}

/**
 * One user content part as an Anthropic content block: text → `text`; an image → `image` with a `base64`
 * or `url` source; a PDF → `document` with a `base64` source; a plain-text file → `document` with a
 * `text` source holding the decoded UTF-8 text (its filename, when given, as the document's `title`).
 * Empty text and parts `unsupportedContentPart` names (refused before the call) give `undefined`.
 * OpenAI's image `detail` has no Anthropic field: the caller reports it.
 *
 * @see https://docs.anthropic.com/en/api/messages#body-messages-content
 * @see https://docs.anthropic.com/en/docs/build-with-claude/vision#base64-encoded-image-example
 * @see https://docs.anthropic.com/en/docs/build-with-claude/pdf-support#option-2-base64-encoded-pdf-document
 * @see https://docs.anthropic.com/en/docs/build-with-claude/citations#plain-text-documents
 */
export function convertAnthropicContentPart(part: ContentPart): AnthropicContentBlock | undefined {
  if (unsupportedContentPart(part) !== undefined) return undefined;
  switch (part.type) {
    case 'text':
      return part.text === '' ? undefined : { type: 'text', text: part.text };
    case 'image':
      return {
        type: 'image',
        source:
          part.image.kind === 'url'
            ? { type: 'url', url: part.image.url }
            : { type: 'base64', media_type: part.image.mediaType, data: part.image.data },
      };
    case 'file': {
      const data = part.data ?? '';
      const title = part.filename === undefined || part.filename === '' ? {} : { title: part.filename };
      if (part.mediaType === 'application/pdf') {
        return {
          type: 'document',
          source: { type: 'base64', media_type: 'application/pdf', data },
          ...title,
        };
      }
      const text = Buffer.from(data, 'base64').toString('utf8');
      return { type: 'document', source: { type: 'text', media_type: 'text/plain', data: text }, ...title };
    }
    case 'audio':
      return undefined;
  }
}
