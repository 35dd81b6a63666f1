import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { convertAnthropicUsage } from '../../src/providers/anthropic/index.js';
import { convertGeminiUsage } from '../../src/providers/gemini/index.js';
import { convertOpenAIUsage } from '../../src/providers/openai-compatible/index.js';

// Each format's usage read without double counting (docs/providers.md "Cached prompt tokens"):
// `promptTokens` is always the whole prompt, the cache reads and writes parts of it.

function fixtureUsage(name: string): unknown {
  const body = JSON.parse(readFileSync(new URL(`./__fixtures__/${name}`, import.meta.url), 'utf8'));
  return (body as { usage: unknown }).usage;
}

describe('cached prompt tokens, per format', () => {
  it('OpenAI-compatible: prompt_tokens includes prompt_tokens_details.cached_tokens', () => {
    const usage = {
      prompt_tokens: 2006,
      completion_tokens: 300,
      total_tokens: 2306,
      prompt_tokens_details: { cached_tokens: 1920 },
    };
    expect(convertOpenAIUsage(usage)).toEqual({
      promptTokens: 2006,
      completionTokens: 300,
      cachedPromptTokens: 1920,
    });
  });

  it('DeepSeek: prompt_cache_hit_tokens + prompt_cache_miss_tokens = prompt_tokens, the hits cached', () => {
    expect(convertOpenAIUsage(fixtureUsage('deepseek-cache-usage.json'))).toEqual({
      promptTokens: 3120,
      completionTokens: 10,
      cachedPromptTokens: 3072,
    });
    // Without prompt_tokens, the two parts make the prompt.
    expect(
      convertOpenAIUsage({
        completion_tokens: 10,
        prompt_cache_hit_tokens: 3072,
        prompt_cache_miss_tokens: 48,
      }),
    ).toEqual({ promptTokens: 3120, completionTokens: 10, cachedPromptTokens: 3072 });
  });

  it('Anthropic: input_tokens excludes the cache reads and writes, which are added to the prompt', () => {
    expect(
      convertAnthropicUsage({
        input_tokens: 50,
        cache_creation_input_tokens: 2_000,
        cache_read_input_tokens: 10_000,
        output_tokens: 70,
      }),
    ).toEqual({
      promptTokens: 12_050,
      completionTokens: 70,
      cachedPromptTokens: 10_000,
      cacheWritePromptTokens: 2_000,
    });
  });

  it('Gemini: promptTokenCount includes cachedContentTokenCount', () => {
    expect(
      convertGeminiUsage({
        promptTokenCount: 5_000,
        cachedContentTokenCount: 4_096,
        candidatesTokenCount: 20,
        totalTokenCount: 5_020,
      }),
    ).toEqual({ promptTokens: 5_000, completionTokens: 20, cachedPromptTokens: 4_096 });
  });
});
