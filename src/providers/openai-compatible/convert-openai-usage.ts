import { badResponse, isRecord, readTokenCount } from '../json-value.js';
import type { UpstreamUsage } from '../types.js';

/**
 * Reads an OpenAI-compatible `usage`: `prompt_tokens` and `completion_tokens`, the prompt tokens read from
 * the cache (`prompt_tokens_details.cached_tokens`, else DeepSeek's own `prompt_cache_hit_tokens`) and the
 * reasoning tokens (`completion_tokens_details.reasoning_tokens`, part of `completion_tokens`). The cached
 * tokens are part of `prompt_tokens` (DeepSeek: `prompt_cache_hit_tokens` + `prompt_cache_miss_tokens` =
 * `prompt_tokens`, and that sum stands in when `prompt_tokens` is absent); no host of this format reports a
 * cache write. A count the
 * upstream does not report stays `undefined` (the detail counts are then left out), never 0; absent usage
 * is "nothing reported". A count that is there but not a non-negative integer makes the answer unreadable.
 *
 * @see https://platform.openai.com/docs/api-reference/chat/object#chat/object-usage
 * @see https://api-docs.deepseek.com/api/create-chat-completion
 * @see https://api-docs.deepseek.com/guides/kv_cache
 */
export function convertOpenAIUsage(usage: unknown): UpstreamUsage {
  if (usage === undefined || usage === null) return { promptTokens: undefined, completionTokens: undefined };
  if (!isRecord(usage)) throw badResponse('upstream usage is not an object');
  const hit = readTokenCount(usage, 'prompt_cache_hit_tokens');
  const miss = readTokenCount(usage, 'prompt_cache_miss_tokens');
  const result: UpstreamUsage = {
    promptTokens:
      readTokenCount(usage, 'prompt_tokens') ??
      (hit !== undefined && miss !== undefined ? hit + miss : undefined),
    completionTokens: readTokenCount(usage, 'completion_tokens'),
  };
  const cached = readDetail(usage, 'prompt_tokens_details', 'cached_tokens') ?? hit;
  if (cached !== undefined) result.cachedPromptTokens = cached;
  const reasoning = readDetail(usage, 'completion_tokens_details', 'reasoning_tokens');
  if (reasoning !== undefined) result.reasoningTokens = reasoning;
  return result;
}

/** One count of a details object (`prompt_tokens_details`, …); absent or `null` details report nothing. */
function readDetail(usage: Record<string, unknown>, details: string, field: string): number | undefined {
  const value = usage[details];
  if (value === undefined || value === null) return undefined;
  if (!isRecord(value)) throw badResponse(`upstream usage field ${details} is not an object`);
  return readTokenCount(value, field);
}
