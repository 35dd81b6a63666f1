/**
 * Anthropic Messages (`POST {baseUrl}/v1/messages`, `x-api-key` + `anthropic-version`).
 * @see https://docs.anthropic.com/en/api/messages
 * @see https://docs.anthropic.com/en/api/errors
 */
import type { Finish } from '../reply.js';
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

function errorType(status: number): string {
  switch (status) {
    case 400:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 402:
      return 'billing_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 504:
      return 'timeout_error';
    case 529:
      return 'overloaded_error';
    default:
      return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}

function stopReason(finish: Finish): string {
  if (finish === 'length') return 'max_tokens';
  return finish === 'stop_sequence' ? 'stop_sequence' : 'end_turn';
}

function parse(body: unknown): Conversation | string {
  if (!isRecord(body)) return 'The request body must be a JSON object.';
  if (typeof body.model !== 'string' || body.model.length === 0) return 'model: Field required (string)';
  if (body.max_tokens === undefined) return 'max_tokens: Field required';
  if (!isPositiveInt(body.max_tokens)) return 'max_tokens: must be a positive integer';
  const { messages } = body;
  if (!Array.isArray(messages) || messages.length === 0) return 'messages: must be a non-empty array';
  const messageTexts: string[] = [];
  if (body.system !== undefined) {
    const system = textOfParts(body.system);
    if (system === null) return 'system: must be a string or an array of {type: "text", text} blocks';
    messageTexts.push(system);
  }
  let lastUserText = '';
  for (const [i, message] of messages.entries()) {
    if (!isRecord(message)) return `messages.${i}: must be an object`;
    if (message.role !== 'user' && message.role !== 'assistant') {
      return `messages.${i}.role: Input should be 'user' or 'assistant'${
        message.role === 'system' ? ' (use the top-level system parameter for a system prompt)' : ''
      }`;
    }
    const text = textOfParts(message.content);
    if (text === null) {
      return `messages.${i}.content: must be a string or an array of {type: "text", text} blocks`;
    }
    messageTexts.push(text);
    if (message.role === 'user') lastUserText = text;
  }
  if (body.stream === true) return 'stream: the simulator does not stream';
  let stops: string[] = [];
  if (isStringArray(body.stop_sequences)) stops = body.stop_sequences;
  else if (body.stop_sequences !== undefined) return 'stop_sequences: must be an array of strings';
  return { model: body.model, messageTexts, lastUserText, cap: body.max_tokens, stops };
}

function error(status: number, message: string): HttpReply {
  return { status, body: { type: 'error', error: { type: errorType(status), message } } };
}

export const anthropicFormat: FormatAdapter = {
  format: 'anthropic',
  prefix: '/anthropic',
  baseUrl: (url, slug) => `${url}/anthropic/${encodeURIComponent(slug)}`,
  matchEndpoint: (subpath) => (subpath === '/v1/messages' ? { model: null } : null),
  authenticate(call) {
    if (!call.headers['x-api-key']) return error(401, 'x-api-key header is required');
    if (!call.headers['anthropic-version']) return error(400, 'anthropic-version: header is required');
    return null;
  },
  parse: (body) => parse(body),
  success(_slug, conv, reply, usage) {
    return {
      id: `msg_${randomId(24)}`,
      type: 'message',
      role: 'assistant',
      model: conv.model,
      content: [{ type: 'text', text: reply.text }],
      stop_reason: stopReason(reply.finish),
      stop_sequence: reply.stopSequence,
      ...(usage === null
        ? {}
        : { usage: { input_tokens: usage.promptTokens, output_tokens: usage.completionTokens } }),
    };
  },
  noChoices(_slug, conv, usage) {
    return {
      id: `msg_${randomId(24)}`,
      type: 'message',
      role: 'assistant',
      model: conv.model,
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: usage.promptTokens, output_tokens: usage.completionTokens },
    };
  },
  error,
};
