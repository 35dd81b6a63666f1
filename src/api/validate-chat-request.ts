import { GatewayError } from '../errors.js';
import type { ChatRequest } from '../gateway/types.js';
import type { ChatMessage, Role, SamplingParams } from '../providers/types.js';

export interface ValidationLimits {
  maxMessages: number;
  maxTokensCeiling: number;
}

const ROLES: readonly Role[] = ['system', 'user', 'assistant'];
const MESSAGES_REQUIRED = 'Messages array is required';

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function invalidMessages(param: string): GatewayError {
  // The spec fixes the message; `param` says which part of `messages` is wrong.
  return new GatewayError('invalid_messages', MESSAGES_REQUIRED, { param });
}

function invalidParam(param: string, what: string): GatewayError {
  return new GatewayError('invalid_request', `Invalid value for '${param}': ${what}.`, { param });
}

/**
 * `content` is a string, or an array of `{type: "text", text}` parts (as OpenAI clients send), joined
 * with newlines. Anything else is invalid.
 */
function readContent(value: unknown, path: string): string {
  if (typeof value === 'string') return value;
  if (!Array.isArray(value) || value.length === 0) throw invalidMessages(`${path}.content`);
  const texts: string[] = [];
  value.forEach((part: unknown, i) => {
    if (!isRecord(part) || part.type !== 'text' || typeof part.text !== 'string') {
      throw invalidMessages(`${path}.content[${i}]`);
    }
    texts.push(part.text);
  });
  return texts.join('\n');
}

function readMessages(value: unknown, limits: ValidationLimits): ChatMessage[] {
  if (!Array.isArray(value) || value.length === 0) throw invalidMessages('messages');
  if (value.length > limits.maxMessages) {
    throw new GatewayError(
      'invalid_messages',
      `${MESSAGES_REQUIRED}: at most ${limits.maxMessages} messages are accepted per request (got ${value.length}).`,
      { param: 'messages' },
    );
  }
  const messages: ChatMessage[] = [];
  for (let i = 0; i < value.length; i++) {
    const item: unknown = value[i];
    const path = `messages[${i}]`;
    if (!isRecord(item)) throw invalidMessages(path);
    const role = item.role;
    if (typeof role !== 'string' || !(ROLES as readonly string[]).includes(role))
      throw invalidMessages(`${path}.role`);
    messages.push({ role: role as Role, content: readContent(item.content, path) });
  }
  return messages;
}

function optionalString(body: Record<string, unknown>, key: string): string | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || v.length === 0 || v.length > 256) {
    throw invalidParam(key, 'expected a non-empty string of at most 256 characters');
  }
  return v;
}

function optionalNumber(
  body: Record<string, unknown>,
  key: string,
  min: number,
  max: number,
): number | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) {
    throw invalidParam(key, `expected a number from ${min} to ${max}`);
  }
  return v;
}

function optionalInteger(
  body: Record<string, unknown>,
  key: string,
  min: number,
  max: number,
): number | undefined {
  const v = optionalNumber(body, key, min, max);
  if (v !== undefined && !Number.isInteger(v))
    throw invalidParam(key, `expected an integer from ${min} to ${max}`);
  return v;
}

function readStop(value: unknown): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return [value];
  if (
    Array.isArray(value) &&
    value.length <= 4 &&
    value.every((s) => typeof s === 'string' && s.length > 0)
  ) {
    return value as string[];
  }
  throw invalidParam('stop', 'expected a string or an array of at most 4 non-empty strings');
}

function readParams(body: Record<string, unknown>): SamplingParams {
  const params: SamplingParams = {};
  const temperature = optionalNumber(body, 'temperature', 0, 2);
  if (temperature !== undefined) params.temperature = temperature;
  const topP = optionalNumber(body, 'top_p', 0, 1);
  if (topP !== undefined) params.top_p = topP;
  const presence = optionalNumber(body, 'presence_penalty', -2, 2);
  if (presence !== undefined) params.presence_penalty = presence;
  const frequency = optionalNumber(body, 'frequency_penalty', -2, 2);
  if (frequency !== undefined) params.frequency_penalty = frequency;
  const seed = optionalInteger(body, 'seed', Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
  if (seed !== undefined) params.seed = seed;
  const stop = readStop(body.stop);
  if (stop !== undefined) params.stop = stop;
  const user = optionalString(body, 'user');
  if (user !== undefined) params.user = user;
  return params;
}

/**
 * Validates a parsed JSON body into a `ChatRequest`, in DESIGN.md's precedence: messages (400
 * invalid_messages) → stream (400 streaming_not_supported) → the other fields (400 invalid_request).
 * Unknown fields are ignored.
 */
export function validateChatRequest(body: unknown, limits: ValidationLimits): ChatRequest {
  const record = isRecord(body) ? body : undefined;
  const messages = readMessages(record?.messages, limits);
  if (!record) throw invalidMessages('messages');
  const stream = record.stream;
  if (stream === true) {
    throw new GatewayError(
      'streaming_not_supported',
      'Streaming is not supported: responses are always complete JSON. Set "stream" to false or omit it.',
      { param: 'stream' },
    );
  }
  if (stream !== undefined && stream !== null && stream !== false) {
    throw invalidParam('stream', 'expected a boolean (and only false is supported)');
  }
  const model = optionalString(record, 'model');
  const provider = optionalString(record, 'provider');
  const maxCompletion = optionalInteger(record, 'max_completion_tokens', 1, limits.maxTokensCeiling);
  const maxTokens = optionalInteger(record, 'max_tokens', 1, limits.maxTokensCeiling);
  return {
    messages,
    model,
    provider,
    maxTokens: maxCompletion ?? maxTokens,
    params: readParams(record),
  };
}
