/**
 * OpenAI-compatible Chat Completions (`POST {baseUrl}/chat/completions`, `Authorization: Bearer`).
 * Tool calls come back as `message.tool_calls` (ids `call_<24 alphanumerics>`, `content` null,
 * finish `tool_calls`); log probabilities as `choices[].logprobs.content`; reasoning tokens as
 * `usage.completion_tokens_details.reasoning_tokens` (part of `completion_tokens`).
 * @see https://platform.openai.com/docs/api-reference/chat
 * @see https://platform.openai.com/docs/api-reference/chat/object
 */
import type { ChoiceAnswer } from '../answer.js';
import { type TokenLogprob, tokenBytes, tokenLogprobs } from '../logprobs.js';
import { parseOpenAIRequest } from './openai-request.js';
import { type Conversation, type FormatAdapter, type HttpReply, randomId, type Usage } from './shared.js';

function errorType(status: number): { type: string; code: string | null } {
  if (status === 401) return { type: 'authentication_error', code: 'invalid_api_key' };
  if (status === 403) return { type: 'permission_error', code: null };
  if (status === 404) return { type: 'not_found_error', code: null };
  if (status === 429) return { type: 'rate_limit_error', code: 'rate_limit_exceeded' };
  if (status >= 500) return { type: 'server_error', code: null };
  return { type: 'invalid_request_error', code: null };
}

export function finishReason(choice: ChoiceAnswer): string {
  if (choice.finish === 'tool_calls') return 'tool_calls';
  return choice.finish === 'length' ? 'length' : 'stop';
}

export function error(status: number, message: string, param: string | null = null): HttpReply {
  const { type, code } = errorType(status);
  return { status, body: { error: { message, type, code, param } } };
}

function envelope(conv: Conversation) {
  return {
    id: `chatcmpl-${randomId(29)}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: conv.model,
  };
}

/** `usage`: the cache reads in `prompt_tokens_details.cached_tokens`, or DeepSeek's hit and miss counts. */
export function usageBody(usage: Usage) {
  const cached = usage.cacheReadTokens ?? 0;
  return {
    prompt_tokens: usage.promptTokens,
    completion_tokens: usage.completionTokens,
    total_tokens: usage.promptTokens + usage.completionTokens,
    ...(usage.deepseek === true
      ? { prompt_cache_hit_tokens: cached, prompt_cache_miss_tokens: usage.promptTokens - cached }
      : { prompt_tokens_details: { cached_tokens: cached } }),
    completion_tokens_details: { reasoning_tokens: usage.reasoningTokens },
  };
}

/** `choices[].logprobs.content`: one entry per o200k token of the text. */
function logprobsContent(text: string, top: number) {
  return logprobEntries(tokenLogprobs(text, top));
}

/** `logprobs.content` entries of these tokens. */
export function logprobEntries(tokens: readonly TokenLogprob[]) {
  return tokens.map((t) => ({
    token: t.token,
    logprob: t.logprob,
    bytes: tokenBytes(t.token),
    top_logprobs: t.top.map((alt) => ({
      token: alt.token,
      logprob: alt.logprob,
      bytes: tokenBytes(alt.token),
    })),
  }));
}

function renderChoice(conv: Conversation, choice: ChoiceAnswer, index: number) {
  const calls = choice.toolCalls;
  return {
    index,
    message: {
      role: 'assistant',
      content: calls.length > 0 ? null : choice.text,
      refusal: null,
      ...(calls.length > 0
        ? {
            tool_calls: calls.map((call) => ({
              id: `call_${randomId(24)}`,
              type: 'function',
              function: { name: call.name, arguments: call.argumentsJson },
            })),
          }
        : {}),
    },
    logprobs:
      conv.logprobs === null
        ? null
        : {
            content: calls.length > 0 ? null : logprobsContent(choice.text, conv.logprobs.top),
            refusal: null,
          },
    finish_reason: finishReason(choice),
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
  parse: (body) => parseOpenAIRequest(body),
  success(_slug, conv, answer, usage) {
    return {
      ...envelope(conv),
      choices: answer.choices.map((choice, i) => renderChoice(conv, choice, i)),
      ...(usage === null ? {} : { usage: usageBody(usage) }),
      system_fingerprint: 'fp_sim',
    };
  },
  noChoices(_slug, conv, usage) {
    return { ...envelope(conv), usage: usageBody(usage) };
  },
  error,
};
