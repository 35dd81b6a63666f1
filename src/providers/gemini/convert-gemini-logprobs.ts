import { isRecord } from '../json-value.js';

const utf8 = new TextEncoder();

/** One OpenAI log-probability entry: the token, its log probability and its UTF-8 bytes. */
interface TokenLogprob {
  token: string;
  logprob: number;
  bytes: number[];
}

/**
 * A candidate's `logprobsResult` as OpenAI's `choices[].logprobs`: `{content: [...]}`, one entry per
 * chosen token (`chosenCandidates[i]`) with `token`, `logprob` (Gemini's `logProbability`), `bytes` (the
 * token's UTF-8 bytes) and `top_logprobs`: the first `top` alternatives Gemini listed for that step
 * (`topCandidates[i].candidates`, most likely first), none when `top` is not given. Gemini's JSON is
 * proto3, which leaves out zero values: a missing `logProbability` is 0 (a certain token), a missing
 * `token` the empty string. Without a `logprobsResult` (the model did not report one) it is `null`.
 *
 * @see https://ai.google.dev/api/generate-content#LogprobsResult
 * @see https://platform.openai.com/docs/api-reference/chat/object#chat/object-choices
 */
export function convertGeminiLogprobs(
  logprobsResult: unknown,
  top: number | undefined,
): Record<string, unknown> | null {
  if (!isRecord(logprobsResult)) return null;
  const chosen = Array.isArray(logprobsResult.chosenCandidates) ? logprobsResult.chosenCandidates : [];
  const alternatives = Array.isArray(logprobsResult.topCandidates) ? logprobsResult.topCandidates : [];
  const content = chosen.map((candidate: unknown, i: number) => {
    const step: unknown = alternatives[i];
    const listed = isRecord(step) && Array.isArray(step.candidates) ? step.candidates : [];
    return {
      ...tokenLogprob(candidate),
      top_logprobs: listed.slice(0, top ?? 0).map((alternative: unknown) => tokenLogprob(alternative)),
    };
  });
  return { content };
}

function tokenLogprob(candidate: unknown): TokenLogprob {
  const record = isRecord(candidate) ? candidate : {};
  const token = typeof record.token === 'string' ? record.token : '';
  const logprob = typeof record.logProbability === 'number' ? record.logProbability : 0;
  return { token, logprob, bytes: Array.from(utf8.encode(token)) };
}
