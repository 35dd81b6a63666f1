import { describe, expect, it } from 'vitest';
import { parseFault } from '../../src/simulator/faults.js';
import { usageBody as anthropicUsage } from '../../src/simulator/formats/anthropic.js';
import { usageMetadata } from '../../src/simulator/formats/gemini.js';
import { usageBody as openaiUsage } from '../../src/simulator/formats/openai.js';

// The `usage` fault's cached parts, as each wire format reports them.

const usage = {
  promptTokens: 1_000,
  completionTokens: 10,
  reasoningTokens: 0,
  cacheReadTokens: 600,
  cacheWriteTokens: 300,
};

describe('simulator: cached prompt tokens per format', () => {
  it('OpenAI: prompt_tokens whole, the reads in prompt_tokens_details; DeepSeek: hit and miss', () => {
    expect(openaiUsage(usage)).toMatchObject({
      prompt_tokens: 1_000,
      prompt_tokens_details: { cached_tokens: 600 },
    });
    const deepseek = openaiUsage({ ...usage, deepseek: true });
    expect(deepseek).toMatchObject({
      prompt_tokens: 1_000,
      prompt_cache_hit_tokens: 600,
      prompt_cache_miss_tokens: 400,
    });
    expect(deepseek).not.toHaveProperty('prompt_tokens_details');
  });

  it('Anthropic: input_tokens without the cache reads and writes, which come apart', () => {
    expect(anthropicUsage(usage)).toMatchObject({
      input_tokens: 100,
      cache_read_input_tokens: 600,
      cache_creation_input_tokens: 300,
    });
  });

  it('Gemini: promptTokenCount whole, cachedContentTokenCount within it (left out at 0)', () => {
    expect(usageMetadata(usage)).toMatchObject({ promptTokenCount: 1_000, cachedContentTokenCount: 600 });
    expect(usageMetadata({ ...usage, cacheReadTokens: 0 })).not.toHaveProperty('cachedContentTokenCount');
  });

  it('the control API takes the parts within the prompt only', () => {
    expect(
      parseFault({
        kind: 'usage',
        promptTokens: 10,
        completionTokens: 1,
        cacheReadTokens: 4,
        cacheWriteTokens: 6,
      }),
    ).toEqual({
      kind: 'usage',
      promptTokens: 10,
      completionTokens: 1,
      cacheReadTokens: 4,
      cacheWriteTokens: 6,
    });
    expect(parseFault({ kind: 'usage', promptTokens: 10, completionTokens: 1, cacheReadTokens: 11 })).toMatch(
      /within promptTokens/,
    );
    expect(parseFault({ kind: 'usage', promptTokens: 10, completionTokens: 1, deepseek: 'yes' })).toMatch(
      /boolean/,
    );
  });
});
