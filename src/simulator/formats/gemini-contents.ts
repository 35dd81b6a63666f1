/**
 * The contents of a Gemini `generateContent` request, read as the Gemini API reads them: one data field per
 * part, roles `user` / `model` (absent: `user`) with the first turn a user turn, function calls in model
 * turns answered by the next turn's function responses (same count, same names, same ids when both carry
 * one), and file URIs limited to uploaded files (Files API, `gs://`).
 *
 * @see https://ai.google.dev/api/caching#Content
 * @see https://ai.google.dev/gemini-api/docs/function-calling
 * @see https://ai.google.dev/gemini-api/docs/files
 */
import type { ToolResult } from '../conversation.js';
import { addAudio, addFile, addImage, base64Bytes, emptyTally, isBase64, type MediaTally } from '../media.js';
import { toolCallTokens, toolResultTokens } from '../prompt-tokens.js';
import { fail, notAMessage, readFields } from './gemini-fields.js';
import { isRecord } from './shared.js';

/** The package of Gemini's proto messages, as its errors name their types. */
export const V1BETA = 'google.ai.generativelanguage.v1beta';
const PART_FIELDS = [
  'text',
  'inlineData',
  'fileData',
  'functionCall',
  'functionResponse',
  'executableCode',
  'codeExecutionResult',
  'toolCall',
  'toolResponse',
  'thought',
  'thoughtSignature',
  'videoMetadata',
  'mediaResolution',
  'partMetadata',
];
/** The members of the part's `data` oneof. */
const DATA_FIELDS = PART_FIELDS.slice(0, 9);
/** URIs of uploaded files: the Files API's, and Cloud Storage objects. */
const FILE_URI =
  /^(https:\/\/generativelanguage\.googleapis\.com\/v1(?:alpha|beta)?\/files\/[a-z0-9-]+|gs:\/\/\S+)$/;

interface Call {
  name: string;
  id: string | undefined;
}

export interface Turn {
  role: 'user' | 'model';
  /** Whether it holds text parts (thoughts aside). */
  text: boolean;
  calls: Call[];
  responses: { name: string; id: string | undefined; at: string; text: string }[];
}

export interface Reading {
  media: MediaTally;
  messageTexts: string[];
  lastUserText: string;
  extra: number;
  turns: Turn[];
}

function classify(mimeType: string, bytes: number, media: MediaTally): void {
  if (mimeType.startsWith('image/')) addImage(media, 'gemini');
  else if (mimeType.startsWith('audio/')) addAudio(media, bytes);
  else addFile(media, bytes);
}

function readPart(
  raw: unknown,
  at: string,
  role: 'user' | 'model',
  turn: Turn,
  reading: Reading,
): string | null {
  if (!isRecord(raw)) notAMessage(at, `${V1BETA}.Part`, raw);
  const part = readFields(raw, PART_FIELDS, at);
  const data = DATA_FIELDS.filter((f) => part[f] !== undefined);
  if (data.length === 0)
    fail(`* GenerateContentRequest.${at}.data: required oneof field 'data' must have one initialized field`);
  if (data.length > 1)
    fail(`Invalid JSON payload received. Oneof field 'data' is already set. Cannot set '${data[1]}'`);
  if (part.thought !== undefined && typeof part.thought !== 'boolean') {
    fail(`Invalid value at '${at}.thought' (TYPE_BOOL), ${JSON.stringify(part.thought)}`);
  }
  if (part.text !== undefined) {
    if (typeof part.text !== 'string')
      fail(`Invalid value at '${at}.text' (TYPE_STRING), ${JSON.stringify(part.text)}`);
    // Thoughts of earlier turns are not part of the prompt.
    return part.thought === true ? null : part.text;
  }
  if (part.inlineData !== undefined) {
    const here = `${at}.inline_data`;
    if (!isRecord(part.inlineData)) notAMessage(here, `${V1BETA}.Blob`, part.inlineData);
    const blob = readFields(part.inlineData, ['mimeType', 'data', 'displayName'], here);
    if (typeof blob.mimeType !== 'string' || !/^[\w.+-]+\/[\w.+-]+$/.test(blob.mimeType)) {
      fail(`* GenerateContentRequest.${here}.mime_type: a MIME type is required`);
    }
    if (typeof blob.data !== 'string' || !isBase64(blob.data, true)) {
      fail(
        `Invalid value at '${here}.data' (TYPE_BYTES), Base64 decoding failed for ${JSON.stringify(String(blob.data).slice(0, 40))}`,
      );
    }
    classify(blob.mimeType.toLowerCase(), base64Bytes(blob.data), reading.media);
    return null;
  }
  if (part.fileData !== undefined) {
    const here = `${at}.file_data`;
    if (!isRecord(part.fileData)) notAMessage(here, `${V1BETA}.FileData`, part.fileData);
    const file = readFields(part.fileData, ['mimeType', 'fileUri', 'displayName'], here);
    if (typeof file.fileUri !== 'string' || file.fileUri.length === 0)
      fail(`* GenerateContentRequest.${here}.file_uri: a file URI is required`);
    if (!FILE_URI.test(file.fileUri)) fail(`Invalid or unsupported file uri: ${file.fileUri}`);
    classify(typeof file.mimeType === 'string' ? file.mimeType.toLowerCase() : '', 0, reading.media);
    return null;
  }
  if (part.functionCall !== undefined) {
    const here = `${at}.function_call`;
    if (role !== 'model')
      fail(`* GenerateContentRequest.${here}: a function call can only be in a model turn`);
    if (!isRecord(part.functionCall)) notAMessage(here, `${V1BETA}.FunctionCall`, part.functionCall);
    const call = readFields(part.functionCall, ['id', 'name', 'args', 'partialArgs', 'willContinue'], here);
    if (typeof call.name !== 'string' || call.name.length === 0)
      fail(`* GenerateContentRequest.${here}.name: Name is required`);
    if (call.args !== undefined && !isRecord(call.args))
      notAMessage(`${here}.args`, 'google.protobuf.Struct', call.args);
    turn.calls.push({ name: call.name, id: typeof call.id === 'string' ? call.id : undefined });
    reading.extra += toolCallTokens(call.name, JSON.stringify(call.args ?? {}));
    return null;
  }
  if (part.functionResponse !== undefined) {
    const here = `${at}.function_response`;
    if (role !== 'user')
      fail(`* GenerateContentRequest.${here}: a function response can only be in a user turn`);
    if (!isRecord(part.functionResponse))
      notAMessage(here, `${V1BETA}.FunctionResponse`, part.functionResponse);
    const response = readFields(
      part.functionResponse,
      ['id', 'name', 'response', 'parts', 'willContinue', 'scheduling'],
      here,
    );
    if (typeof response.name !== 'string' || response.name.length === 0) {
      fail(`* GenerateContentRequest.${here}.name: Name is required`);
    }
    if (!isRecord(response.response))
      notAMessage(`${here}.response`, 'google.protobuf.Struct', response.response);
    const text = JSON.stringify(response.response);
    turn.responses.push({
      name: response.name,
      id: typeof response.id === 'string' ? response.id : undefined,
      at: here,
      text,
    });
    reading.extra += toolResultTokens(text);
    return null;
  }
  // Code execution and server-side tool parts: kept, not read.
  return null;
}

export function readContents(contents: unknown[]): Reading {
  const reading: Reading = { media: emptyTally(), messageTexts: [], lastUserText: '', extra: 0, turns: [] };
  for (const [i, raw] of contents.entries()) {
    const at = `contents[${i}]`;
    if (!isRecord(raw)) notAMessage(at, `${V1BETA}.Content`, raw);
    const content = readFields(raw, ['role', 'parts'], at);
    const role = content.role ?? 'user';
    if (role !== 'user' && role !== 'model') fail('Please use a valid role: user, model.');
    if (i === 0 && role !== 'user')
      fail('Please ensure that multiturn requests alternate between user and model.');
    if (!Array.isArray(content.parts) || content.parts.length === 0) {
      fail(`* GenerateContentRequest.${at}.parts: contents.parts must not be empty.`);
    }
    const turn: Turn = { role, text: false, calls: [], responses: [] };
    const texts: string[] = [];
    for (const [j, part] of content.parts.entries()) {
      const text = readPart(part, `${at}.parts[${j}]`, role, turn, reading);
      if (text !== null) texts.push(text);
    }
    const text = texts.join('\n');
    turn.text = texts.length > 0;
    reading.messageTexts.push(text);
    if (role === 'user' && !(texts.length === 0 && turn.responses.length > 0)) reading.lastUserText = text;
    reading.turns.push(turn);
  }
  return reading;
}

/** Function calls and responses across turns; returns the last turn's results (null: not results alone). */
export function pairFunctions(turns: Turn[]): ToolResult[] | null {
  for (const [t, turn] of turns.entries()) {
    const previous = t > 0 ? turns[t - 1] : undefined;
    if (turn.calls.length > 0 && previous?.role !== 'user') {
      fail(
        'Please ensure that function call turn comes immediately after a user turn or after a function response turn.',
      );
    }
    if (turn.responses.length === 0) continue;
    if (!previous || previous.role !== 'model' || previous.calls.length === 0) {
      fail('Please ensure that function response turn comes immediately after a function call turn.');
    }
    if (turn.responses.length !== previous.calls.length) {
      fail(
        'Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.',
      );
    }
    const open = [...previous.calls];
    for (const response of turn.responses) {
      const k = open.findIndex(
        (c) =>
          c.name === response.name &&
          (response.id === undefined || c.id === undefined || c.id === response.id),
      );
      if (k === -1) {
        fail(
          `* GenerateContentRequest.${response.at}.name: ${response.name}${response.id === undefined ? '' : ` (id ${response.id})`} answers no function call of the preceding model turn (${previous.calls.map((c) => c.name).join(', ')}).`,
        );
      }
      open.splice(k, 1);
    }
  }
  // A last turn that also says something of its own is a user message, not function results.
  const last = turns.at(-1);
  if (!last || last.responses.length === 0 || last.text) return null;
  return last.responses.map((r) => ({ name: r.name, text: r.text }));
}

export function readSystem(value: unknown): string {
  if (!isRecord(value)) notAMessage('system_instruction', `${V1BETA}.Content`, value);
  const content = readFields(value, ['role', 'parts'], 'system_instruction');
  if (!Array.isArray(content.parts) || content.parts.length === 0) {
    fail('* GenerateContentRequest.system_instruction.parts: contents.parts must not be empty.');
  }
  return content.parts
    .map((raw, j) => {
      const at = `system_instruction.parts[${j}]`;
      if (!isRecord(raw)) notAMessage(at, `${V1BETA}.Part`, raw);
      const part = readFields(raw, PART_FIELDS, at);
      if (typeof part.text !== 'string')
        fail(`* GenerateContentRequest.${at}: system instructions take text parts only`);
      return part.text;
    })
    .join('\n');
}
