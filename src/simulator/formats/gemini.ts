/**
 * Gemini generateContent (`POST {baseUrl}/v1beta/models/{model}:generateContent`, `x-goog-api-key` or `?key=`;
 * `:streamGenerateContent` streams, see `gemini-stream.ts`).
 * Function calls come back as `functionCall` parts without an `id` (as the Gemini Developer API answers
 * for Gemini 2.x models), finish `STOP`; `candidateCount` candidates; log probabilities as
 * `logprobsResult` + `avgLogprobs`; thinking as `usageMetadata.thoughtsTokenCount`, which — as Gemini
 * reports it — is not part of `candidatesTokenCount` but is part of `totalTokenCount` (and of the
 * `maxOutputTokens` budget). A candidate that produced nothing (thinking spent the budget) has no `parts`.
 * @see https://ai.google.dev/api/generate-content
 * @see https://ai.google.dev/api/generate-content#UsageMetadata
 * @see https://ai.google.dev/gemini-api/docs/troubleshooting#error-codes
 */
import type { ChoiceAnswer } from '../answer.js';
import { type TokenLogprob, tokenLogprobs } from '../logprobs.js';
import { parseGeminiRequest, THOUGHT_TEXT } from './gemini-request.js';
import { type Conversation, type FormatAdapter, type HttpReply, randomId, type Usage } from './shared.js';

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

export function finishReason(choice: ChoiceAnswer): string {
  return choice.finish === 'length' ? 'MAX_TOKENS' : 'STOP';
}

export function error(status: number, message: string): HttpReply {
  return { status, body: { error: { code: status, message, status: statusName(status) } } };
}

export function usageMetadata(usage: Usage) {
  return {
    promptTokenCount: usage.promptTokens,
    candidatesTokenCount: usage.completionTokens - usage.reasoningTokens,
    totalTokenCount: usage.promptTokens + usage.completionTokens,
    ...(usage.reasoningTokens > 0 ? { thoughtsTokenCount: usage.reasoningTokens } : {}),
    // Part of promptTokenCount; proto JSON leaves a zero out.
    ...((usage.cacheReadTokens ?? 0) > 0 ? { cachedContentTokenCount: usage.cacheReadTokens } : {}),
  };
}

function logprobsOf(text: string, top: number) {
  return logprobsOfTokens(tokenLogprobs(text, top), top);
}

/** `avgLogprobs` and `logprobsResult` of these tokens. */
export function logprobsOfTokens(tokens: readonly TokenLogprob[], top: number) {
  const chosen = tokens.map((t) => ({ token: t.token, tokenId: t.tokenId, logProbability: t.logprob }));
  const sum = chosen.reduce((total, c) => total + c.logProbability, 0);
  return {
    avgLogprobs: chosen.length === 0 ? 0 : sum / chosen.length,
    logprobsResult: {
      ...(top > 0
        ? {
            topCandidates: tokens.map((t) => ({
              candidates: t.top.map((alt) => ({
                token: alt.token,
                tokenId: alt.tokenId,
                logProbability: alt.logprob,
              })),
            })),
          }
        : {}),
      chosenCandidates: chosen,
      logProbabilitySum: sum,
    },
  };
}

function renderCandidate(conv: Conversation, choice: ChoiceAnswer, index: number) {
  const parts: unknown[] = [];
  if (conv.showThoughts && choice.reasoningTokens > 0) parts.push({ text: THOUGHT_TEXT, thought: true });
  if (choice.toolCalls.length > 0) {
    for (const call of choice.toolCalls) parts.push({ functionCall: { name: call.name, args: call.args } });
  } else if (choice.text !== '' || choice.finish !== 'length') {
    parts.push({ text: choice.text });
  }
  return {
    content: parts.length > 0 ? { parts, role: 'model' } : { role: 'model' },
    finishReason: finishReason(choice),
    index,
    ...(conv.logprobs === null ? {} : logprobsOf(choice.text, conv.logprobs.top)),
  };
}

export const geminiFormat: FormatAdapter = {
  format: 'gemini',
  prefix: '/gemini',
  baseUrl: (url, slug) => `${url}/gemini/${encodeURIComponent(slug)}`,
  matchEndpoint(subpath) {
    const match = /^\/v1beta\/models\/([^/]+):(?:generateContent|streamGenerateContent)$/.exec(subpath);
    return match ? { model: decodeURIComponent(match[1] as string) } : null;
  },
  authenticate(call) {
    if (call.headers['x-goog-api-key'] || call.query.get('key')) return null;
    return error(
      401,
      'Request is missing required authentication credential. Expected an API key (x-goog-api-key header or key parameter).',
    );
  },
  parse: (body, pathModel) => parseGeminiRequest(body, pathModel ?? ''),
  success(_slug, conv, answer, usage) {
    return {
      candidates: answer.choices.map((choice, i) => renderCandidate(conv, choice, i)),
      ...(usage === null ? {} : { usageMetadata: usageMetadata(usage) }),
      modelVersion: conv.model,
      responseId: randomId(22),
    };
  },
  noChoices(_slug, _conv, usage) {
    return { usageMetadata: usageMetadata(usage) };
  },
  error: (status, message) => error(status, message),
};
