import { badResponse, isRecord, readTokenCount, sumReported } from '../json-value.js';
import type { UpstreamUsage } from '../types.js';

/**
 * Anthropic reports input in three parts that do not overlap: `input_tokens` (after the last cache
 * breakpoint), `cache_creation_input_tokens` (written to the cache) and `cache_read_input_tokens` (read from
 * it). The prompt count is their sum — the whole prompt, as OpenAI counts it — with the cache reads and
 * writes as its cached parts (`cachedPromptTokens`, `cacheWritePromptTokens`), each priced apart. When
 * `input_tokens` is not reported the prompt count is `undefined`, whatever the cache fields say. `output_tokens` already includes thinking; its thinking part is reported only by
 * recent API versions, as `output_tokens_details.thinking_tokens` (`undefined` when absent).
 *
 * @see https://docs.anthropic.com/en/api/messages#response-usage
 * @see https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching#tracking-cache-performance
 * @see https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking#pricing
 */
export function convertAnthropicUsage(usage: unknown): UpstreamUsage {
  if (usage === undefined || usage === null) return { promptTokens: undefined, completionTokens: undefined };
  if (!isRecord(usage)) throw badResponse('upstream usage is not an object');
  const input = readTokenCount(usage, 'input_tokens');
  const cacheCreation = readTokenCount(usage, 'cache_creation_input_tokens');
  const cacheRead = readTokenCount(usage, 'cache_read_input_tokens');
  const converted: UpstreamUsage = {
    promptTokens: input === undefined ? undefined : sumReported(input, cacheCreation, cacheRead),
    completionTokens: readTokenCount(usage, 'output_tokens'),
  };
  if (input !== undefined && cacheRead !== undefined) converted.cachedPromptTokens = cacheRead;
  if (input !== undefined && cacheCreation !== undefined) converted.cacheWritePromptTokens = cacheCreation;
  const details = usage.output_tokens_details;
  if (isRecord(details)) {
    const thinking = readTokenCount(details, 'thinking_tokens');
    if (thinking !== undefined) converted.reasoningTokens = thinking;
  }
  return converted;
}
