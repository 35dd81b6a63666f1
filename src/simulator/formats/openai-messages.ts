/**
 * The messages of a Chat Completions request, read as OpenAI reads them: roles, content parts (text,
 * images, audio and files, in user messages only; refusals in assistant messages), and the pairing of
 * tool calls with tool messages: a tool message answers a call of the assistant message before it, and
 * every call is answered before the next message that is not a tool message.
 *
 * @see https://platform.openai.com/docs/api-reference/chat/create#chat-create-messages
 * @see https://platform.openai.com/docs/guides/function-calling#handling-function-calls
 */
import type { ToolResult } from '../conversation.js';
import {
  addAudio,
  addFile,
  addImage,
  base64Bytes,
  emptyTally,
  isBase64,
  isHttpUrl,
  type MediaTally,
  parseDataUrl,
} from '../media.js';
import { toolCallTokens, toolResultTokens } from '../prompt-tokens.js';
import { isAbsent, isRecord } from './shared.js';

const ROLES = new Set(['system', 'user', 'assistant', 'developer', 'tool']);
const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/** A request OpenAI refuses (400): its message and the `param` it names. */
export class OpenAIInvalid {
  constructor(
    readonly message: string,
    readonly param: string | null,
  ) {}
}

export function fail(message: string, param: string | null = null): never {
  throw new OpenAIInvalid(message, param);
}

/** One content part of a user message; adds its media to `media`, returns its text (null: not text). */
function readUserPart(part: unknown, at: string, media: MediaTally): string | null {
  if (!isRecord(part)) fail(`Invalid '${at}': expected an object.`, at);
  switch (part.type) {
    case 'text':
      if (typeof part.text !== 'string') fail(`Invalid '${at}.text': expected a string.`, `${at}.text`);
      return part.text;
    case 'image_url': {
      const image = part.image_url;
      if (!isRecord(image) || typeof image.url !== 'string') {
        fail(`Missing required parameter: '${at}.image_url.url'.`, `${at}.image_url.url`);
      }
      if (!isAbsent(image.detail) && !['auto', 'low', 'high'].includes(image.detail as string)) {
        fail(
          `Invalid value: '${String(image.detail)}'. Supported values are: 'auto', 'low', and 'high'.`,
          `${at}.image_url.detail`,
        );
      }
      if (!isHttpUrl(image.url)) {
        const data = parseDataUrl(image.url);
        if (!data || !IMAGE_TYPES.has(data.mediaType) || !isBase64(data.data)) {
          fail(
            `Invalid '${at}.image_url.url'. Expected a valid http(s) URL or a base64-encoded data URL with an image MIME type (image/png, image/jpeg, image/gif, image/webp), e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='.`,
            `${at}.image_url.url`,
          );
        }
      }
      addImage(media, 'openai-compatible');
      return null;
    }
    case 'input_audio': {
      const audio = part.input_audio;
      if (!isRecord(audio) || typeof audio.data !== 'string') {
        fail(`Missing required parameter: '${at}.input_audio.data'.`, `${at}.input_audio.data`);
      }
      if (audio.format !== 'wav' && audio.format !== 'mp3') {
        fail(
          `Invalid value: '${String(audio.format)}'. Supported values are: 'wav' and 'mp3'.`,
          `${at}.input_audio.format`,
        );
      }
      if (!isBase64(audio.data)) {
        fail(`Invalid '${at}.input_audio.data': expected base64-encoded audio.`, `${at}.input_audio.data`);
      }
      addAudio(media, base64Bytes(audio.data));
      return null;
    }
    case 'file': {
      const file = part.file;
      if (!isRecord(file)) fail(`Missing required parameter: '${at}.file'.`, `${at}.file`);
      if (!isAbsent(file.filename) && typeof file.filename !== 'string') {
        fail(`Invalid '${at}.file.filename': expected a string.`, `${at}.file.filename`);
      }
      if (typeof file.file_data === 'string') {
        const data = parseDataUrl(file.file_data);
        if (!data || !isBase64(data.data)) {
          fail(
            `Invalid '${at}.file.file_data'. Expected a base64-encoded data URL, e.g. 'data:application/pdf;base64,SGVsbG8='.`,
            `${at}.file.file_data`,
          );
        }
        addFile(media, base64Bytes(data.data));
        return null;
      }
      if (typeof file.file_id === 'string' && file.file_id.length > 0) {
        addFile(media, 0);
        return null;
      }
      return fail(
        `Missing required parameter: '${at}.file.file_data' or '${at}.file.file_id'.`,
        `${at}.file`,
      );
    }
    default:
      fail(
        `Invalid value: '${String(part.type)}'. Supported values are: 'text', 'image_url', 'input_audio', and 'file'.`,
        `${at}.type`,
      );
  }
}

/** Text parts only (system, developer, tool; assistant adds `refusal`). */
function readTextParts(content: unknown[], at: string, role: string): string {
  const texts: string[] = [];
  for (const [j, part] of content.entries()) {
    const here = `${at}[${j}]`;
    if (!isRecord(part)) fail(`Invalid '${here}': expected an object.`, here);
    if (part.type === 'text' && typeof part.text === 'string') texts.push(part.text);
    else if (role === 'assistant' && part.type === 'refusal' && typeof part.refusal === 'string') {
      texts.push(part.refusal);
    } else if (['image_url', 'input_audio', 'file'].includes(part.type as string)) {
      const what = part.type === 'image_url' ? 'Image URLs' : part.type === 'file' ? 'Files' : 'Audio inputs';
      fail(
        `${what} are only allowed for messages with role 'user', but this message with role '${role}' contains one.`,
        `${here}.type`,
      );
    } else {
      fail(
        `Invalid '${here}': expected a text part${role === 'assistant' ? ' or a refusal part' : ''}.`,
        `${here}.type`,
      );
    }
  }
  return texts.join('\n');
}

interface OpenCalls {
  index: number;
  names: Map<string, string>;
  answered: Set<string>;
}

function unanswered(open: OpenCalls): void {
  const missing = [...open.names.keys()].filter((id) => !open.answered.has(id));
  if (missing.length > 0) {
    fail(
      `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${missing.join(', ')}`,
      `messages.[${open.index}].role`,
    );
  }
}

/** Reads assistant `tool_calls`; returns their ids → names and their prompt tokens. */
function readToolCalls(calls: unknown, i: number): { names: Map<string, string>; tokens: number } {
  const at = `messages[${i}].tool_calls`;
  if (!Array.isArray(calls) || calls.length === 0) {
    fail(`Invalid '${at}': expected a non-empty array.`, at);
  }
  const names = new Map<string, string>();
  let tokens = 0;
  for (const [j, call] of calls.entries()) {
    const here = `${at}[${j}]`;
    if (!isRecord(call) || typeof call.id !== 'string')
      fail(`Missing required parameter: '${here}.id'.`, `${here}.id`);
    if (call.type !== 'function') {
      fail(`Invalid value: '${String(call.type)}'. Supported values are: 'function'.`, `${here}.type`);
    }
    const fn = call.function;
    if (!isRecord(fn) || typeof fn.name !== 'string') {
      fail(`Missing required parameter: '${here}.function.name'.`, `${here}.function.name`);
    }
    if (typeof fn.arguments !== 'string') {
      fail(
        `Invalid '${here}.function.arguments': expected a string (JSON text).`,
        `${here}.function.arguments`,
      );
    }
    names.set(call.id, fn.name);
    tokens += toolCallTokens(fn.name, fn.arguments);
  }
  return { names, tokens };
}

/** The messages: texts, last user text, media, extra prompt tokens and the trailing tool results. */
export function readMessages(messages: unknown[]) {
  const media = emptyTally();
  const messageTexts: string[] = [];
  let lastUserText = '';
  let extra = 0;
  let open: OpenCalls | null = null;
  let results: ToolResult[] = [];
  for (const [i, message] of messages.entries()) {
    const at = `messages[${i}]`;
    if (!isRecord(message)) fail(`Invalid '${at}': expected an object.`, at);
    const { role, content } = message;
    if (typeof role !== 'string' || !ROLES.has(role)) {
      fail(
        `Invalid value: '${String(role)}'. Supported values are: 'system', 'developer', 'user', 'assistant', and 'tool'.`,
        `${at}.role`,
      );
    }
    if (!isAbsent(message.name) && typeof message.name !== 'string')
      fail(`Invalid '${at}.name': expected a string.`, `${at}.name`);
    if (Array.isArray(content) && content.length === 0) {
      fail(
        `Invalid '${at}.content': empty array. Expected an array with minimum length 1, but got an empty array instead.`,
        `${at}.content`,
      );
    }
    if (role === 'tool') {
      if (!open) {
        fail(
          "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
          `messages.[${i}].role`,
        );
      }
      const id = message.tool_call_id;
      if (typeof id !== 'string')
        fail(`Missing required parameter: '${at}.tool_call_id'.`, `${at}.tool_call_id`);
      const name = open.names.get(id);
      if (name === undefined) {
        fail(
          `Invalid parameter: 'tool_call_id' of '${id}' not found in 'tool_calls' of previous message.`,
          `messages.[${i}].tool_call_id`,
        );
      }
      if (typeof content !== 'string' && !Array.isArray(content)) {
        fail(`Invalid '${at}.content': expected a string or an array of text parts.`, `${at}.content`);
      }
      const text = typeof content === 'string' ? content : readTextParts(content, `${at}.content`, role);
      open.answered.add(id);
      results.push({ name, text });
      extra += toolResultTokens(text);
      messageTexts.push('');
      continue;
    }
    if (open) {
      unanswered(open);
      open = null;
    }
    let text: string;
    if (role === 'assistant') {
      const hasCalls = !isAbsent(message.tool_calls);
      if (isAbsent(content)) {
        if (!hasCalls && typeof message.refusal !== 'string') {
          fail("Invalid value for 'content': expected a string, got null.", `${at}.content`);
        }
        text = '';
      } else if (typeof content === 'string') text = content;
      else if (Array.isArray(content)) text = readTextParts(content, `${at}.content`, role);
      else fail(`Invalid '${at}.content': expected a string, an array of parts, or null.`, `${at}.content`);
      if (hasCalls) {
        const calls = readToolCalls(message.tool_calls, i);
        extra += calls.tokens;
        open = { index: i, names: calls.names, answered: new Set() };
        results = [];
      }
    } else if (typeof content === 'string') {
      text = content;
    } else if (Array.isArray(content)) {
      if (role === 'user') {
        const texts: string[] = [];
        for (const [j, part] of content.entries()) {
          const partText = readUserPart(part, `${at}.content[${j}]`, media);
          if (partText !== null) texts.push(partText);
        }
        text = texts.join('\n');
      } else {
        text = readTextParts(content, `${at}.content`, role);
      }
    } else {
      fail(`Invalid '${at}.content': expected a string or an array of content parts.`, `${at}.content`);
    }
    messageTexts.push(text);
    if (role === 'user') lastUserText = text;
  }
  if (open) unanswered(open);
  const last = messages.at(-1) as Record<string, unknown>;
  return {
    media,
    messageTexts,
    lastUserText,
    extra: extra + media.tokens,
    toolResults: last.role === 'tool' ? results : null,
  };
}
