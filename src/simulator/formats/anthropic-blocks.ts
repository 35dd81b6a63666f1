/**
 * The content blocks of an Anthropic Messages request, read as the Messages API reads them: fields it does
 * not know are refused ("Extra inputs are not permitted"), text blocks must hold non-whitespace text, and
 * images and documents are checked by source type (their cost goes to the media tally).
 *
 * @see https://docs.anthropic.com/en/api/messages
 * @see https://docs.anthropic.com/en/docs/build-with-claude/vision
 * @see https://docs.anthropic.com/en/docs/build-with-claude/pdf-support
 */
import { createHash } from 'node:crypto';
import { addFile, addImage, base64Bytes, isBase64, isHttpUrl, type MediaTally } from '../media.js';
import { isAbsent, isRecord } from './shared.js';

/** Output tokens of the thinking block the simulator writes when thinking is on. */
export const THINKING_TOKENS = 24;
/** The text of that block. */
export const THINKING_TEXT = 'Simulated thinking.';

/** Where Anthropic's thinking errors send the reader. */
export const THINKING_DOCS = 'https://docs.claude.com/en/docs/build-with-claude/extended-thinking';

const IMAGE_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);

/** The fields each block type takes. */
export const BLOCK_FIELDS: Readonly<Record<string, readonly string[]>> = {
  text: ['type', 'text', 'cache_control', 'citations'],
  image: ['type', 'source', 'cache_control', 'transformations'],
  document: ['type', 'source', 'title', 'context', 'citations', 'cache_control'],
  tool_use: ['type', 'id', 'name', 'input', 'cache_control', 'caller', 'toolset_name'],
  tool_result: ['type', 'tool_use_id', 'content', 'is_error', 'cache_control', 'toolset_name'],
  thinking: ['type', 'thinking', 'signature'],
  redacted_thinking: ['type', 'data'],
};

/** A request the Messages API refuses (400), with its message. */
export class AnthropicInvalid {
  constructor(readonly message: string) {}
}

export function fail(message: string): never {
  throw new AnthropicInvalid(message);
}

/** Refuses keys of `value` outside `known`, as the API does. */
export function noExtra(
  value: Record<string, unknown>,
  known: ReadonlySet<string> | readonly string[],
  at: string,
): void {
  for (const key in value) {
    const allowed = Array.isArray(known) ? known.includes(key) : (known as ReadonlySet<string>).has(key);
    if (!allowed) fail(`${at === '' ? '' : `${at}.`}${key}: Extra inputs are not permitted`);
  }
}

/** The signature of a thinking block the simulator wrote: it takes back only blocks it signed, unchanged. */
export function signThinking(thinking: string): string {
  return createHash('sha256').update(`tollgate-simulator-thinking\n${thinking}`).digest('base64');
}

export function checkText(text: unknown, at: string, where: string): string {
  if (typeof text !== 'string') fail(`${at}.text: Input should be a valid string`);
  if (text.length === 0) fail(`${where}: text content blocks must be non-empty`);
  if (text.trim().length === 0) fail(`${where}: text content blocks must contain non-whitespace text`);
  return text;
}

/** A `system` value: a string or text blocks. */
export function readSystem(system: unknown): string {
  if (typeof system === 'string') return system;
  if (!Array.isArray(system)) fail('system: Input should be a valid string or a list of text blocks');
  const texts: string[] = [];
  for (const [j, block] of system.entries()) {
    const at = `system.${j}`;
    if (!isRecord(block) || block.type !== 'text') fail(`${at}.type: Input should be 'text'`);
    noExtra(block, BLOCK_FIELDS.text as readonly string[], at);
    texts.push(checkText(block.text, at, 'system'));
  }
  return texts.join('\n');
}

export function readImage(block: Record<string, unknown>, at: string, media: MediaTally): void {
  const source = block.source;
  if (!isRecord(source)) fail(`${at}.source: Field required`);
  switch (source.type) {
    case 'base64':
      noExtra(source, ['type', 'media_type', 'data'], `${at}.source.base64`);
      if (!IMAGE_TYPES.has(source.media_type as string)) {
        fail(
          `${at}.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'`,
        );
      }
      if (typeof source.data !== 'string' || !isBase64(source.data) || source.data.length === 0) {
        fail(`${at}.source.base64.data: Input should be valid base64 data`);
      }
      break;
    case 'url':
      noExtra(source, ['type', 'url'], `${at}.source.url`);
      if (typeof source.url !== 'string' || !isHttpUrl(source.url)) {
        fail(`${at}.source.url.url: Input should be a valid http(s) URL`);
      }
      break;
    case 'file':
      noExtra(source, ['type', 'file_id'], `${at}.source.file`);
      if (typeof source.file_id !== 'string') fail(`${at}.source.file.file_id: Field required`);
      break;
    default:
      fail(
        `${at}.source: Input tag '${String(source.type)}' found using 'type' does not match any of the expected tags: 'base64', 'url', 'file'`,
      );
  }
  addImage(media, 'anthropic');
}

export function readDocument(block: Record<string, unknown>, at: string, media: MediaTally): void {
  const source = block.source;
  if (!isRecord(source)) fail(`${at}.source: Field required`);
  switch (source.type) {
    case 'base64':
      noExtra(source, ['type', 'media_type', 'data'], `${at}.source.base64`);
      if (source.media_type !== 'application/pdf')
        fail(`${at}.source.base64.media_type: Input should be 'application/pdf'`);
      if (typeof source.data !== 'string' || !isBase64(source.data) || source.data.length === 0) {
        fail(`${at}.source.base64.data: Input should be valid base64 data`);
      }
      addFile(media, base64Bytes(source.data));
      return;
    case 'text':
      noExtra(source, ['type', 'media_type', 'data'], `${at}.source.text`);
      if (source.media_type !== 'text/plain')
        fail(`${at}.source.text.media_type: Input should be 'text/plain'`);
      if (typeof source.data !== 'string') fail(`${at}.source.text.data: Input should be a valid string`);
      addFile(media, Buffer.byteLength(source.data));
      return;
    case 'url':
      noExtra(source, ['type', 'url'], `${at}.source.url`);
      if (typeof source.url !== 'string' || !isHttpUrl(source.url)) {
        fail(`${at}.source.url.url: Input should be a valid http(s) URL`);
      }
      addFile(media, 0);
      return;
    case 'content': {
      noExtra(source, ['type', 'content'], `${at}.source.content`);
      const text = typeof source.content === 'string' ? source.content : JSON.stringify(source.content ?? '');
      addFile(media, Buffer.byteLength(text));
      return;
    }
    case 'file':
      noExtra(source, ['type', 'file_id'], `${at}.source.file`);
      if (typeof source.file_id !== 'string') fail(`${at}.source.file.file_id: Field required`);
      addFile(media, 0);
      return;
    default:
      fail(
        `${at}.source: Input tag '${String(source.type)}' found using 'type' does not match any of the expected tags: 'base64', 'text', 'url', 'content', 'file'`,
      );
  }
}

/** A tool_result's content as text (its images and documents go to `media`). */
export function readResultContent(content: unknown, at: string, media: MediaTally): string {
  if (isAbsent(content)) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content))
    fail(`${at}.content: Input should be a valid string or a list of content blocks`);
  const texts: string[] = [];
  for (const [k, block] of content.entries()) {
    const here = `${at}.content.${k}`;
    if (!isRecord(block)) fail(`${here}: Input should be a valid dictionary`);
    const fields = BLOCK_FIELDS[block.type as string];
    if (block.type === 'text' && fields) {
      noExtra(block, fields, `${here}.text`);
      texts.push(checkText(block.text, here, 'messages'));
    } else if (block.type === 'image' && fields) {
      noExtra(block, fields, `${here}.image`);
      readImage(block, `${here}.image`, media);
    } else if (block.type === 'document' && fields) {
      noExtra(block, fields, `${here}.document`);
      readDocument(block, `${here}.document`, media);
    } else {
      fail(
        `${here}: Input tag '${String(block.type)}' found using 'type' does not match any of the expected tags: 'text', 'image', 'document'`,
      );
    }
  }
  return texts.join('\n');
}
