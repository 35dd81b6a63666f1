import { GatewayError } from '../errors.js';
import type { ChatMessage, ContentPart, ImageSource, ToolCall } from '../providers/types.js';

/** The message of the `invalid_messages` error for `messages` absent, not an array, or empty (docs/errors.md). */
export const MESSAGES_REQUIRED = 'Messages array is required';

type Json = Record<string, unknown>;

/** The image types every wire format takes inline. */
const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);
const DATA_URL = /^data:([a-z0-9.+-]+\/[a-z0-9.+-]+)(?:;[a-z0-9-]+=[^;,]*)*;base64,/i;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** A message that is not of its role's shape: `param` says where, the message what is wrong there. */
function invalid(param: string, message: string): GatewayError {
  return new GatewayError('invalid_messages', message, { param });
}

/** A content part of a type its message's role does not take. */
function wrongPart(at: string, part: Json, role: string, takes: string): GatewayError {
  return invalid(at, `${at} is of type ${JSON.stringify(part.type)}; ${role} message takes ${takes}.`);
}

/** `data:<type>;base64,<data>` → its media type and data; undefined when the URL is not of that form. */
export function parseDataUrl(url: string): { mediaType: string; data: string } | undefined {
  const match = DATA_URL.exec(url);
  if (!match) return undefined;
  const data = url.slice(match[0].length);
  if (data.length === 0 || data.length % 4 === 1 || !BASE64.test(data)) return undefined;
  return { mediaType: (match[1] as string).toLowerCase(), data };
}

function imageSource(url: string, param: string): ImageSource {
  if (url.startsWith('data:')) {
    const parsed = parseDataUrl(url);
    if (!parsed || !IMAGE_TYPES.has(parsed.mediaType)) {
      throw invalid(param, `${param} must be a base64 data: URL of a PNG, JPEG, GIF or WebP image.`);
    }
    return { kind: 'data', ...parsed };
  }
  if (/^https?:\/\/[^\s]+$/i.test(url)) return { kind: 'url', url };
  throw invalid(param, `${param} must be a data: URL or an http(s) URL.`);
}

/** The text of content that may carry only text parts (system, developer, tool, function). */
function textOnly(content: unknown, param: string, role: string): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) {
    throw invalid(`${param}.content`, `${param}.content is required: a ${role} message needs text.`);
  }
  const texts: string[] = [];
  for (const [j, p] of (content as Json[]).entries()) {
    if (p.type !== 'text') throw wrongPart(`${param}.content[${j}]`, p, `a ${role}`, 'text parts only');
    texts.push(p.text as string);
  }
  return texts.join('\n');
}

function userContent(content: unknown, param: string): string | ContentPart[] {
  if (content === null || content === undefined) {
    throw invalid(`${param}.content`, `${param}.content is required: a user message needs content.`);
  }
  if (typeof content === 'string') return content;
  const parts: ContentPart[] = [];
  for (const [j, p] of (content as Json[]).entries()) {
    const at = `${param}.content[${j}]`;
    switch (p.type) {
      case 'text':
        parts.push({ type: 'text', text: p.text as string });
        break;
      case 'image_url': {
        const image = p.image_url as { url: string; detail?: 'auto' | 'low' | 'high' };
        parts.push({
          type: 'image',
          image: imageSource(image.url, `${at}.image_url.url`),
          detail: image.detail,
        });
        break;
      }
      case 'input_audio': {
        const audio = p.input_audio as { data: string; format: string };
        if (audio.data.length % 4 === 1 || !BASE64.test(audio.data)) {
          throw invalid(`${at}.input_audio.data`, `${at}.input_audio.data must be base64.`);
        }
        parts.push({ type: 'audio', data: audio.data, format: audio.format });
        break;
      }
      case 'file': {
        const file = p.file as { file_data?: string; file_id?: string; filename?: string };
        let inline: { mediaType: string; data: string } | undefined;
        if (file.file_data !== undefined) {
          inline = parseDataUrl(file.file_data);
          if (!inline)
            throw invalid(`${at}.file.file_data`, `${at}.file.file_data must be a base64 data: URL.`);
        } else if (file.file_id === undefined) {
          throw invalid(`${at}.file`, `${at}.file needs file_data or file_id.`);
        }
        parts.push({
          type: 'file',
          data: inline?.data,
          mediaType: inline?.mediaType,
          fileId: file.file_id,
          filename: file.filename,
        });
        break;
      }
      default:
        throw wrongPart(at, p, 'a user', 'text, image_url, input_audio and file parts');
    }
  }
  // Text alone is a string, as it always was: the parts joined with newlines.
  if (parts.every((p) => p.type === 'text')) return parts.map((p) => (p as { text: string }).text).join('\n');
  return parts;
}

/**
 * OpenAI's `messages` (already accepted by the JSON Schema) → the normalised `ChatMessage` list: each
 * role's own shape checked, text-only content as a string, legacy `function_call` / `function` messages
 * as tool calls and tool results, and every tool result paired with the call it answers (its function's
 * name attached, which Gemini needs). Any violation is a 400 `invalid_messages` naming the field.
 *
 * @see https://platform.openai.com/docs/api-reference/chat/create#chat-create-messages
 */
export function normalizeMessages(raw: readonly Json[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  // The calls of the latest assistant message that made any, by id; answered ones are removed.
  let open = new Map<string, ToolCall>();
  let legacyCalls = 0;
  for (const [i, m] of raw.entries()) {
    const param = `messages[${i}]`;
    const name = typeof m.name === 'string' ? m.name : undefined;
    const named = <T extends ChatMessage>(message: T): T =>
      name === undefined ? message : { ...message, name };
    switch (m.role) {
      case 'system':
      case 'developer':
        out.push(named({ role: m.role, content: textOnly(m.content, param, m.role) }));
        break;
      case 'user':
        out.push(named({ role: 'user', content: userContent(m.content, param) }));
        break;
      case 'assistant': {
        const toolCalls: ToolCall[] = [];
        for (const call of (m.tool_calls as Json[] | undefined) ?? []) {
          const fn = call.function as { name: string; arguments: string };
          toolCalls.push({ id: call.id as string, name: fn.name, arguments: fn.arguments });
        }
        const legacy = m.function_call as { name: string; arguments: string } | null | undefined;
        if (legacy) {
          legacyCalls += 1;
          toolCalls.push({
            id: `call_legacy_${legacyCalls}`,
            name: legacy.name,
            arguments: legacy.arguments,
          });
        }
        let text: string | null = null;
        let refusal = typeof m.refusal === 'string' ? m.refusal : undefined;
        if (typeof m.content === 'string') text = m.content;
        else if (Array.isArray(m.content)) {
          const texts: string[] = [];
          for (const [j, p] of (m.content as Json[]).entries()) {
            if (p.type === 'text') texts.push(p.text as string);
            else if (p.type === 'refusal') refusal = p.refusal as string;
            else throw wrongPart(`${param}.content[${j}]`, p, 'an assistant', 'text and refusal parts only');
          }
          text = texts.length > 0 ? texts.join('\n') : null;
        }
        if (text === null && toolCalls.length === 0 && refusal === undefined) {
          throw invalid(
            `${param}.content`,
            `${param}.content is required: an assistant message needs content, tool_calls, function_call or refusal.`,
          );
        }
        const message: ChatMessage = { role: 'assistant', content: text };
        if (toolCalls.length > 0) {
          message.toolCalls = toolCalls;
          open = new Map(toolCalls.map((c) => [c.id, c]));
        }
        if (refusal !== undefined) message.refusal = refusal;
        out.push(named(message));
        break;
      }
      case 'tool': {
        if (typeof m.tool_call_id !== 'string') {
          throw invalid(
            `${param}.tool_call_id`,
            `${param}.tool_call_id is required: a tool message answers a call.`,
          );
        }
        const call = open.get(m.tool_call_id);
        if (!call) {
          throw invalid(
            `${param}.tool_call_id`,
            `${param}.tool_call_id does not answer a tool call of the assistant message before it.`,
          );
        }
        open.delete(call.id);
        out.push({
          role: 'tool',
          toolCallId: call.id,
          name: call.name,
          content: textOnly(m.content, param, 'tool'),
        });
        break;
      }
      case 'function': {
        // Legacy: answers the latest unanswered call of that function.
        const call = [...open.values()].find((c) => c.name === name);
        if (!call) {
          throw invalid(
            `${param}.name`,
            `${param} (role "function") does not answer a function_call before it.`,
          );
        }
        open.delete(call.id);
        out.push({
          role: 'tool',
          toolCallId: call.id,
          name: call.name,
          content: textOnly(m.content, param, 'function'),
        });
        break;
      }
    }
  }
  return out;
}
