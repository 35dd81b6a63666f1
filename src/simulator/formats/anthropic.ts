/**
 * Anthropic Messages (`POST {baseUrl}/v1/messages`, `x-api-key` + `anthropic-version`).
 * Tool calls come back as `tool_use` blocks (ids `toolu_01<22 alphanumerics>`, after a short text block
 * when the model chose the tools itself), stop reason `tool_use`; thinking as a `thinking` block (signed)
 * before the answer, its tokens part of `output_tokens`.
 * @see https://docs.anthropic.com/en/api/messages
 * @see https://docs.anthropic.com/en/api/errors
 */
import type { ChoiceAnswer } from '../answer.js';
import { signThinking, THINKING_TEXT } from './anthropic-blocks.js';
import { countAnthropicTokens, parseAnthropicRequest } from './anthropic-request.js';
import { type FormatAdapter, type HttpReply, randomId, type Usage } from './shared.js';

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

export function stopReason(choice: ChoiceAnswer): string {
  switch (choice.finish) {
    case 'tool_calls':
      return 'tool_use';
    case 'length':
      return 'max_tokens';
    case 'stop_sequence':
      return 'stop_sequence';
    default:
      return 'end_turn';
  }
}

export function error(status: number, message: string): HttpReply {
  return { status, body: { type: 'error', error: { type: errorType(status), message } } };
}

/** The input counts of `usage`: the uncached part, and the cache writes and reads. */
export function inputUsage(usage: Usage) {
  const read = usage.cacheReadTokens ?? 0;
  const write = usage.cacheWriteTokens ?? 0;
  return {
    input_tokens: usage.promptTokens - read - write,
    cache_creation_input_tokens: write,
    cache_read_input_tokens: read,
  };
}

/** `usage`: `input_tokens` is the prompt without its cache reads and writes, which are counted apart. */
export function usageBody(usage: Usage) {
  return {
    ...inputUsage(usage),
    output_tokens: usage.completionTokens,
    ...(usage.reasoningTokens > 0
      ? { output_tokens_details: { thinking_tokens: usage.reasoningTokens } }
      : {}),
  };
}

function contentBlocks(choice: ChoiceAnswer): unknown[] {
  const blocks: unknown[] = [];
  if (choice.reasoningTokens > 0) {
    blocks.push({ type: 'thinking', thinking: THINKING_TEXT, signature: signThinking(THINKING_TEXT) });
  }
  if (choice.toolCalls.length === 0 || choice.text !== '') blocks.push({ type: 'text', text: choice.text });
  for (const call of choice.toolCalls) {
    blocks.push({ type: 'tool_use', id: `toolu_01${randomId(22)}`, name: call.name, input: call.args });
  }
  return blocks;
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
  parse: (body, _model, headers) => parseAnthropicRequest(body, headers['anthropic-beta'] ?? ''),
  success(_slug, conv, answer, usage) {
    // Anthropic has no `n`: the answer has one choice.
    const choice = answer.choices[0] as ChoiceAnswer;
    return {
      id: `msg_${randomId(24)}`,
      type: 'message',
      role: 'assistant',
      model: conv.model,
      content: contentBlocks(choice),
      stop_reason: stopReason(choice),
      stop_sequence: choice.stopSequence,
      ...(usage === null ? {} : { usage: usageBody(usage) }),
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
      usage: usageBody(usage),
    };
  },
  countTokens: {
    subpath: '/v1/messages/count_tokens',
    answer(body, headers) {
      const count = countAnthropicTokens(body, headers['anthropic-beta'] ?? '');
      return typeof count === 'number'
        ? { status: 200, body: { input_tokens: count } }
        : error(400, count.rejected);
    },
  },
  error: (status, message) => error(status, message),
};
