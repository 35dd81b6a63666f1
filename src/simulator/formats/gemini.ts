/**
 * Gemini generateContent (`POST {baseUrl}/v1beta/models/{model}:generateContent`, `x-goog-api-key` or `?key=`).
 * @see https://ai.google.dev/api/generate-content
 * @see https://ai.google.dev/gemini-api/docs/troubleshooting#error-codes
 */
import { DEFAULT_CAP, type Finish } from '../reply.js';
import {
  type Conversation,
  type FormatAdapter,
  type HttpReply,
  isPositiveInt,
  isRecord,
  isStringArray,
  randomId,
} from './shared.js';

const STATUS: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  409: 'ABORTED',
  429: 'RESOURCE_EXHAUSTED',
  499: 'CANCELLED',
  500: 'INTERNAL',
  501: 'UNIMPLEMENTED',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

function statusName(status: number): string {
  return STATUS[status] ?? (status >= 500 ? 'INTERNAL' : 'INVALID_ARGUMENT');
}

function finishReason(finish: Finish): string {
  return finish === 'length' ? 'MAX_TOKENS' : 'STOP';
}

/** Text of a `{parts: [{text}]}` object; null if malformed. */
function textOfContent(content: unknown): string | null {
  if (!isRecord(content) || !Array.isArray(content.parts) || content.parts.length === 0) return null;
  const texts: string[] = [];
  for (const part of content.parts) {
    if (!isRecord(part) || typeof part.text !== 'string') return null;
    texts.push(part.text);
  }
  return texts.join('\n');
}

function parse(body: unknown, model: string): Conversation | string {
  if (!isRecord(body)) return 'Invalid JSON payload received. The request body must be a JSON object.';
  const { contents } = body;
  if (!Array.isArray(contents) || contents.length === 0) {
    return '* GenerateContentRequest.contents: contents is not specified';
  }
  const messageTexts: string[] = [];
  if (body.systemInstruction !== undefined) {
    const system = textOfContent(body.systemInstruction);
    if (system === null) return '* GenerateContentRequest.system_instruction: must be {parts: [{text}]}';
    messageTexts.push(system);
  }
  let lastUserText = '';
  for (const [i, content] of contents.entries()) {
    if (!isRecord(content) || (content.role !== 'user' && content.role !== 'model')) {
      return `* GenerateContentRequest.contents[${i}].role: must be 'user' or 'model'`;
    }
    const text = textOfContent(content);
    if (text === null) {
      return `* GenerateContentRequest.contents[${i}].parts: must be a non-empty array of {text}`;
    }
    messageTexts.push(text);
    if (content.role === 'user') lastUserText = text;
  }
  let cap = DEFAULT_CAP;
  let stops: string[] = [];
  const config = body.generationConfig;
  if (config !== undefined) {
    if (!isRecord(config)) return '* GenerateContentRequest.generation_config: must be an object';
    if (config.maxOutputTokens !== undefined) {
      if (!isPositiveInt(config.maxOutputTokens)) {
        return '* GenerateContentRequest.generation_config.max_output_tokens: must be a positive integer';
      }
      cap = config.maxOutputTokens;
    }
    for (const field of ['temperature', 'topP'] as const) {
      if (config[field] !== undefined && typeof config[field] !== 'number') {
        return `* GenerateContentRequest.generation_config.${field}: must be a number`;
      }
    }
    if (config.stopSequences !== undefined) {
      if (!isStringArray(config.stopSequences)) {
        return '* GenerateContentRequest.generation_config.stop_sequences: must be an array of strings';
      }
      stops = config.stopSequences;
    }
  }
  return { model, messageTexts, lastUserText, cap, stops };
}

function error(status: number, message: string): HttpReply {
  return { status, body: { error: { code: status, message, status: statusName(status) } } };
}

function usageMetadata(promptTokens: number, completionTokens: number) {
  return {
    promptTokenCount: promptTokens,
    candidatesTokenCount: completionTokens,
    totalTokenCount: promptTokens + completionTokens,
  };
}

export const geminiFormat: FormatAdapter = {
  format: 'gemini',
  prefix: '/gemini',
  baseUrl: (url, slug) => `${url}/gemini/${encodeURIComponent(slug)}`,
  matchEndpoint(subpath) {
    const match = /^\/v1beta\/models\/([^/]+):generateContent$/.exec(subpath);
    return match ? { model: decodeURIComponent(match[1] as string) } : null;
  },
  authenticate(call) {
    if (call.headers['x-goog-api-key'] || call.query.get('key')) return null;
    return error(
      401,
      'Request is missing required authentication credential. Expected an API key (x-goog-api-key header or key parameter).',
    );
  },
  parse: (body, pathModel) => parse(body, pathModel ?? ''),
  success(_slug, conv, reply, usage) {
    return {
      candidates: [
        {
          content: { parts: [{ text: reply.text }], role: 'model' },
          finishReason: finishReason(reply.finish),
          index: 0,
        },
      ],
      ...(usage === null ? {} : { usageMetadata: usageMetadata(usage.promptTokens, usage.completionTokens) }),
      modelVersion: conv.model,
      responseId: randomId(22),
    };
  },
  noChoices(_slug, _conv, usage) {
    return { usageMetadata: usageMetadata(usage.promptTokens, usage.completionTokens) };
  },
  error,
};
