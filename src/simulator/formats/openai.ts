/**
 * OpenAI-compatible Chat Completions (`POST {baseUrl}/chat/completions`, `Authorization: Bearer`).
 * @see https://platform.openai.com/docs/api-reference/chat
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
  textOfParts,
} from './shared.js';

const ROLES = new Set(['system', 'user', 'assistant', 'developer', 'tool']);

function errorType(status: number): { type: string; code: string | null } {
  if (status === 401) return { type: 'authentication_error', code: 'invalid_api_key' };
  if (status === 403) return { type: 'permission_error', code: null };
  if (status === 404) return { type: 'not_found_error', code: null };
  if (status === 429) return { type: 'rate_limit_error', code: 'rate_limit_exceeded' };
  if (status >= 500) return { type: 'server_error', code: null };
  return { type: 'invalid_request_error', code: null };
}

function finishReason(finish: Finish): string {
  return finish === 'length' ? 'length' : 'stop';
}

function parse(body: unknown): Conversation | string {
  if (!isRecord(body)) return 'The request body must be a JSON object.';
  if (typeof body.model !== 'string' || body.model.length === 0) return "'model' must be a non-empty string.";
  const { messages } = body;
  if (!Array.isArray(messages) || messages.length === 0) return "'messages' must be a non-empty array.";
  const messageTexts: string[] = [];
  let lastUserText = '';
  for (const [i, message] of messages.entries()) {
    if (!isRecord(message)) return `'messages.${i}' must be an object.`;
    if (typeof message.role !== 'string' || !ROLES.has(message.role)) {
      return `'messages.${i}.role' must be one of system, user, assistant, developer, tool.`;
    }
    const nullAllowed = message.role === 'assistant' && message.content === null;
    const text = nullAllowed ? '' : textOfParts(message.content);
    if (text === null) return `'messages.${i}.content' must be a string or an array of text parts.`;
    messageTexts.push(text);
    if (message.role === 'user') lastUserText = text;
  }
  for (const field of ['max_tokens', 'max_completion_tokens'] as const) {
    const value = body[field];
    if (value !== undefined && value !== null && !isPositiveInt(value)) {
      return `'${field}' must be a positive integer.`;
    }
  }
  if (body.stream === true) return 'The simulator does not stream; stream must be false or absent.';
  let stops: string[] = [];
  if (typeof body.stop === 'string') stops = [body.stop];
  else if (isStringArray(body.stop)) stops = body.stop;
  else if (body.stop !== undefined && body.stop !== null) {
    return "'stop' must be a string or an array of strings.";
  }
  const cap = isPositiveInt(body.max_completion_tokens)
    ? body.max_completion_tokens
    : isPositiveInt(body.max_tokens)
      ? body.max_tokens
      : DEFAULT_CAP;
  return { model: body.model, messageTexts, lastUserText, cap, stops };
}

function error(status: number, message: string): HttpReply {
  const { type, code } = errorType(status);
  return { status, body: { error: { message, type, code, param: null } } };
}

function envelope(conv: Conversation) {
  return {
    id: `chatcmpl-${randomId(29)}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: conv.model,
  };
}

export const openaiFormat: FormatAdapter = {
  format: 'openai-compatible',
  prefix: '/openai',
  baseUrl: (url, slug) => `${url}/openai/${encodeURIComponent(slug)}/v1`,
  matchEndpoint: (subpath) => (subpath === '/v1/chat/completions' ? { model: null } : null),
  authenticate(call) {
    const header = call.headers.authorization ?? '';
    const match = /^Bearer\s+(\S.*)$/i.exec(header);
    if (match) return null;
    return error(
      401,
      header
        ? 'Invalid Authorization header; expected "Bearer <key>".'
        : "You didn't provide an API key. Provide it in the Authorization header (Bearer <key>).",
    );
  },
  parse: (body) => parse(body),
  success(_slug, conv, reply, usage) {
    return {
      ...envelope(conv),
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: reply.text, refusal: null },
          logprobs: null,
          finish_reason: finishReason(reply.finish),
        },
      ],
      ...(usage === null
        ? {}
        : {
            usage: {
              prompt_tokens: usage.promptTokens,
              completion_tokens: usage.completionTokens,
              total_tokens: usage.promptTokens + usage.completionTokens,
            },
          }),
      system_fingerprint: 'fp_sim',
    };
  },
  noChoices(_slug, conv, usage) {
    return {
      ...envelope(conv),
      usage: {
        prompt_tokens: usage.promptTokens,
        completion_tokens: usage.completionTokens,
        total_tokens: usage.promptTokens + usage.completionTokens,
      },
    };
  },
  error,
};
