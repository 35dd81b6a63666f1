import { describe, expect, it } from 'vitest';
import { anthropicAdapter } from '../../src/providers/anthropic/index.js';
import type { ReasoningEffort, UpstreamChatRequest } from '../../src/providers/types.js';
import { chatRequest, fixture, httpResponse, jsonBody, providerConfig } from './provider-test-helpers.js';

const claude = providerConfig('prov-claude', 'anthropic', 'https://api.anthropic.com', 'claude-sonnet-4-5');

function build(overrides: Partial<UpstreamChatRequest>) {
  const req = anthropicAdapter.buildRequest(claude, chatRequest(overrides));
  return { body: jsonBody(req.body), dropped: req.dropped };
}

// https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking
describe('anthropic adapter: reasoning_effort → thinking', () => {
  it.each<[ReasoningEffort, number]>([
    ['low', 1024],
    ['medium', 4096],
    ['high', 16_384],
    ['xhigh', 32_768],
  ])('%s → budget_tokens %d', (reasoningEffort, budget) => {
    const { body, dropped } = build({ reasoningEffort, maxTokens: 64_000 });
    expect(body.thinking).toEqual({ type: 'enabled', budget_tokens: budget });
    expect(dropped).toBeUndefined();
  });

  it.each<ReasoningEffort>(['none', 'minimal'])('%s → no thinking, nothing dropped', (reasoningEffort) => {
    const { body, dropped } = build({ reasoningEffort, maxTokens: 64_000, params: { temperature: 0.2 } });
    expect(body).not.toHaveProperty('thinking');
    expect(body.temperature).toBe(0.2);
    expect(dropped).toBeUndefined();
  });

  it('clamps the budget below max_tokens', () => {
    expect(build({ reasoningEffort: 'high', maxTokens: 5000 }).body.thinking).toEqual({
      type: 'enabled',
      budget_tokens: 4999,
    });
    expect(build({ reasoningEffort: 'medium', maxTokens: 1025 }).body.thinking).toEqual({
      type: 'enabled',
      budget_tokens: 1024,
    });
  });

  it('max_tokens ≤ 1024 leaves no room for the minimum budget: reasoning_effort is dropped', () => {
    for (const maxTokens of [1024, 256]) {
      const { body, dropped } = build({ reasoningEffort: 'low', maxTokens, params: { temperature: 0.5 } });
      expect(body).not.toHaveProperty('thinking');
      expect(body.temperature).toBe(0.5);
      expect(dropped).toEqual(['reasoning_effort']);
    }
  });

  it('with thinking on, temperature and top_p are left out and reported', () => {
    const { body, dropped } = build({
      reasoningEffort: 'medium',
      maxTokens: 8000,
      params: { temperature: 0.7, top_p: 0.9, stop: ['END'] },
    });
    expect(body).not.toHaveProperty('temperature');
    expect(body).not.toHaveProperty('top_p');
    expect(body.stop_sequences).toEqual(['END']);
    expect(dropped).toEqual(['temperature', 'top_p']);
    expect(build({ reasoningEffort: 'low', maxTokens: 8000, params: { top_p: 0.9 } }).dropped).toEqual([
      'top_p',
    ]);
  });

  // "When thinking is enabled, a final assistant message must start with a thinking block" — an OpenAI
  // conversation carries no thinking blocks, so thinking stays off in the middle of a tool loop.
  it('is dropped when the last assistant turn made tool calls, kept once the loop has ended', () => {
    const loop = [
      { role: 'user' as const, content: 'Weather?' },
      {
        role: 'assistant' as const,
        content: null,
        toolCalls: [{ id: 'toolu_1', name: 'get_weather', arguments: '{"location":"Paris"}' }],
      },
      { role: 'tool' as const, toolCallId: 'toolu_1', name: 'get_weather', content: 'sunny' },
    ];
    const inLoop = build({ reasoningEffort: 'high', maxTokens: 32_000, messages: loop });
    expect(inLoop.body).not.toHaveProperty('thinking');
    expect(inLoop.dropped).toEqual(['reasoning_effort']);
    const after = build({
      reasoningEffort: 'high',
      maxTokens: 32_000,
      messages: [
        ...loop,
        { role: 'assistant', content: 'Sunny in Paris.' },
        { role: 'user', content: 'Thanks!' },
      ],
    });
    expect(after.body.thinking).toEqual({ type: 'enabled', budget_tokens: 16_384 });
    expect(after.dropped).toBeUndefined();
  });
});

describe('anthropic adapter: thinking answers', () => {
  // The response shape of https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking
  // (a thinking block with its signature, a redacted_thinking block, then the text).
  it('thinking and redacted_thinking blocks are not text but kept apart; no reasoning count is reported', () => {
    const result = anthropicAdapter.parseResponse(
      claude,
      httpResponse(200, fixture('anthropic-thinking.json')),
      chatRequest({ reasoningEffort: 'medium', maxTokens: 8000 }),
    );
    expect(result).toEqual({
      choices: [{ text: 'Based on my analysis...', toolCalls: [], finishReason: 'stop' }],
      usage: { promptTokens: 58, completionTokens: 2113, cachedPromptTokens: 0, cacheWritePromptTokens: 0 },
      model: 'claude-sonnet-4-5-20250929',
      // The thinking text, and the signature and redacted data by their size (what a count bills).
      reasoning: { texts: ['Let me analyze this step by step...'], opaqueChars: 237 },
    });
    expect(result.usage.reasoningTokens).toBeUndefined();
  });

  it('reads output_tokens_details.thinking_tokens as reasoning tokens when the API reports it', () => {
    const body = {
      ...(JSON.parse(fixture('anthropic-thinking.json')) as Record<string, unknown>),
      usage: { input_tokens: 58, output_tokens: 2113, output_tokens_details: { thinking_tokens: 1900 } },
    };
    expect(anthropicAdapter.parseResponse(claude, httpResponse(200, body), chatRequest()).usage).toEqual({
      promptTokens: 58,
      completionTokens: 2113,
      reasoningTokens: 1900,
    });
  });
});

describe('anthropic adapter: dropped', () => {
  it('names every field left out, as OpenAI names it, each once', () => {
    const { body, dropped } = build({
      messages: [
        { role: 'user', content: 'Hi', name: 'a' },
        { role: 'assistant', content: 'Hello', name: 'b' },
        {
          role: 'user',
          content: [
            { type: 'image', image: { kind: 'url', url: 'https://example.com/x.png' }, detail: 'high' },
          ],
        },
      ],
      maxTokens: 512,
      reasoningEffort: 'high',
      responseFormat: { type: 'json_schema', name: 'x', description: 'd', schema: { type: 'object' } },
      params: {
        temperature: 0.1,
        top_p: 0.5,
        presence_penalty: 0.5,
        frequency_penalty: 0.5,
        seed: 1,
        logit_bias: { '50256': -100 },
        user: 'u-1',
      },
      openai: {
        metadata: { k: 'v' },
        prediction: { type: 'content', content: 'x' },
        service_tier: 'flex',
        store: false,
        prompt_cache_key: 'p',
        safety_identifier: 's',
        verbosity: 'low',
      },
    });
    expect(dropped).toEqual([
      'messages[].name',
      'messages[].content[].image_url.detail',
      'response_format.json_schema.description',
      'reasoning_effort',
      'top_p',
      'presence_penalty',
      'frequency_penalty',
      'seed',
      'logit_bias',
      'metadata',
      'prediction',
      'service_tier',
      'store',
      'prompt_cache_key',
      'safety_identifier',
      'verbosity',
    ]);
    // Thinking could not be turned on (max_tokens 512), so temperature was sent.
    expect(body.temperature).toBe(0.1);
    expect(body.metadata).toEqual({ user_id: 'u-1' });
    for (const absent of ['thinking', 'top_p', 'seed', 'logit_bias', 'store', 'service_tier', 'prediction']) {
      expect(body).not.toHaveProperty(absent);
    }
  });
});
