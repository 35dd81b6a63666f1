import { isRecord } from '../json-value.js';
import { toolArgumentsObject } from '../tool-arguments.js';
import type { ChatMessage, ContentPart, ToolCall } from '../types.js';
import { convertGeminiContentPart } from './convert-gemini-content-part.js';
import { geminiThoughtSignature } from './gemini-thought-signature.js';
import type { GeminiContent, GeminiPart, GeminiSystemInstruction } from './gemini-wire-types.js';

export type { GeminiContent, GeminiPart } from './gemini-wire-types.js';

export interface GeminiPrompt {
  systemInstruction: GeminiSystemInstruction | undefined;
  contents: GeminiContent[];
  /** Message fields Gemini has no place for, named as OpenAI names them (each once). */
  dropped: string[];
}

type ToolMessage = Extract<ChatMessage, { role: 'tool' }>;

/**
 * Shapes an OpenAI conversation for `generateContent`:
 * - every `system` and `developer` message, wherever it stands, is joined (blank line between) into
 *   `systemInstruction`; a conversation of those only is sent as one user turn holding that text;
 * - user content: a string → one `text` part; parts → `text` / `inlineData` parts
 *   (`convertGeminiContentPart`);
 * - an assistant message is a `model` turn: its text (or, without text, its past `refusal`), then one
 *   `functionCall` part per tool call, `args` the parsed arguments. The call's `id` is not sent: the
 *   Gemini API pairs a call with its result by name and position, and some models and endpoints refuse
 *   an `id` field (HTTP 400 "Unknown name id"). To a Gemini 3 model each call carries the placeholder
 *   thought signature (`geminiThoughtSignature`);
 * - a run of `tool` messages (the results of parallel calls) becomes `functionResponse` parts of one
 *   user turn, in the order of the calls they answer, each named after its function; `response` is the
 *   tool's output when it is a JSON object, otherwise `{result: <the output text>}` (the shape of the
 *   function-calling guide's examples). A user message right after the results joins that turn;
 * - consecutive same-role turns are merged (parts concatenated; two text parts meeting at the seam
 *   joined by a blank line, as two messages' texts are elsewhere); empty text is never sent and a turn
 *   left empty is dropped.
 * `name` (on any message but a tool result) has no Gemini field and is reported as `messages[].name`;
 * likewise an image `detail` other than `auto` (`messages[].content[].image_url.detail`) and a file's
 * `filename` (`messages[].content[].file.filename`).
 *
 * @see https://ai.google.dev/api/generate-content#request-body
 * @see https://ai.google.dev/api/caching#Content
 * @see https://ai.google.dev/gemini-api/docs/function-calling#how-it-works
 * @see https://ai.google.dev/gemini-api/docs/function-calling#parallel_function_calling
 * @see https://ai.google.dev/api/caching#FunctionResponse
 */
export function convertToGeminiContents(messages: readonly ChatMessage[], model = ''): GeminiPrompt {
  const signature = geminiThoughtSignature(model);
  const systemParts: string[] = [];
  const contents: GeminiContent[] = [];
  const dropped = new Set<string>();
  let lastCalls: readonly ToolCall[] = [];
  for (let i = 0; i < messages.length; i += 1) {
    const message = messages[i] as ChatMessage;
    if (message.role !== 'tool' && message.name !== undefined) dropped.add('messages[].name');
    switch (message.role) {
      case 'system':
      case 'developer':
        if (message.content !== '') systemParts.push(message.content);
        break;
      case 'user':
        if (typeof message.content !== 'string') noteDroppedPartFields(message.content, dropped);
        appendTurn(contents, 'user', userParts(message.content));
        break;
      case 'assistant':
        lastCalls = message.toolCalls ?? [];
        appendTurn(contents, 'model', modelParts(message, signature));
        break;
      case 'tool': {
        const run: ToolMessage[] = [message];
        while (messages[i + 1]?.role === 'tool') {
          i += 1;
          run.push(messages[i] as ToolMessage);
        }
        appendTurn(contents, 'user', functionResponses(run, lastCalls));
        break;
      }
    }
  }
  const system = systemParts.length === 0 ? undefined : systemParts.join('\n\n');
  if (contents.length === 0 && system !== undefined) {
    return {
      systemInstruction: undefined,
      contents: [{ role: 'user', parts: [{ text: system }] }],
      dropped: [...dropped],
    };
  }
  return {
    systemInstruction: system === undefined ? undefined : { parts: [{ text: system }] },
    contents,
    dropped: [...dropped],
  };
}

function noteDroppedPartFields(parts: readonly ContentPart[], dropped: Set<string>): void {
  for (const part of parts) {
    if (part.type === 'image' && (part.detail === 'low' || part.detail === 'high')) {
      dropped.add('messages[].content[].image_url.detail');
    }
    if (part.type === 'file' && part.filename !== undefined && part.filename !== '') {
      dropped.add('messages[].content[].file.filename');
    }
  }
}

function userParts(content: string | ContentPart[]): GeminiPart[] {
  if (typeof content === 'string') return content === '' ? [] : [{ text: content }];
  const parts: GeminiPart[] = [];
  for (const part of content) {
    const converted = convertGeminiContentPart(part);
    if (converted !== undefined) parts.push(converted);
  }
  return parts;
}

function modelParts(
  message: Extract<ChatMessage, { role: 'assistant' }>,
  signature: string | undefined,
): GeminiPart[] {
  let text = message.content ?? '';
  if (text === '' && message.refusal !== undefined) text = message.refusal;
  const parts: GeminiPart[] = text === '' ? [] : [{ text }];
  for (const call of message.toolCalls ?? []) {
    // Arguments that are not a JSON object are refused before the call (see `geminiRefusal`).
    const functionCall = { name: call.name, args: toolArgumentsObject(call.arguments) ?? {} };
    parts.push(signature === undefined ? { functionCall } : { functionCall, thoughtSignature: signature });
  }
  return parts;
}

/** The results of one run of tool messages, in the order of the calls they answer. */
function functionResponses(run: readonly ToolMessage[], calls: readonly ToolCall[]): GeminiPart[] {
  const position = (result: ToolMessage): number => {
    const index = calls.findIndex((call) => call.id === result.toolCallId);
    return index === -1 ? calls.length : index;
  };
  // `sort` is stable: results of unknown calls keep their order, after the known ones.
  const ordered = [...run].sort((a, b) => position(a) - position(b));
  return ordered.map((result) => {
    const name =
      result.name !== '' ? result.name : (calls.find((call) => call.id === result.toolCallId)?.name ?? '');
    return { functionResponse: { name, response: functionResponseBody(result.content) } };
  });
}

/** A tool's output as `FunctionResponse.response`: a JSON object as it is, anything else as `{result}`. */
function functionResponseBody(content: string): Record<string, unknown> {
  const trimmed = content.trim();
  if (trimmed.startsWith('{')) {
    try {
      const value = JSON.parse(trimmed) as unknown;
      if (isRecord(value)) return value;
    } catch {
      // Not JSON: sent as text below.
    }
  }
  return { result: content };
}

function appendTurn(contents: GeminiContent[], role: GeminiContent['role'], parts: GeminiPart[]): void {
  if (parts.length === 0) return;
  const last = contents[contents.length - 1];
  if (last === undefined || last.role !== role) {
    contents.push({ role, parts });
    return;
  }
  const seam = last.parts[last.parts.length - 1];
  const first = parts[0];
  if (seam !== undefined && first !== undefined && isTextPart(seam) && isTextPart(first)) {
    last.parts[last.parts.length - 1] = { text: `${seam.text}\n\n${first.text}` };
    last.parts.push(...parts.slice(1));
    return;
  }
  last.parts.push(...parts);
}

function isTextPart(part: GeminiPart): part is { text: string } {
  return 'text' in part;
}
