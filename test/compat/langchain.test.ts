import { AIMessage } from '@langchain/core/messages';
import { ChatOpenAI } from '@langchain/openai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Harness } from '../helpers/harness.js';
import { guardNetwork, simulatedUsage, startListening } from './compat-helpers.js';

let h: Harness;
let baseURL: string;
let network: ReturnType<typeof guardNetwork>;

/**
 * How to point LangChain at Tollgate. `disableStreaming` keeps LangChain from switching to a streamed
 * request (which Tollgate refuses, and whose usage LangChain would estimate with a tiktoken file it
 * downloads) when a streaming callback is attached; `maxRetries: 0` keeps error tests quick.
 */
function chatModel(apiKey: string, model = 'auto'): ChatOpenAI {
  return new ChatOpenAI({ model, apiKey, configuration: { baseURL }, maxRetries: 0, disableStreaming: true });
}

beforeAll(async () => {
  // LangSmith tracing, when switched on by the environment, would post runs to its cloud service.
  vi.stubEnv('LANGSMITH_TRACING', 'false');
  vi.stubEnv('LANGCHAIN_TRACING_V2', 'false');
  network = guardNetwork();
  ({ h, baseURL } = await startListening());
});
afterAll(async () => {
  network.restore();
  vi.unstubAllEnvs();
  await h.close();
});

describe('@langchain/openai ChatOpenAI against a running Tollgate', () => {
  it('invoke() returns the text and usage_metadata equal to what the upstream reported', async () => {
    const prompt = 'Describe a quiet harbor';
    const reply = await chatModel(h.key, 'prov-kimi').invoke(prompt);
    expect(reply).toBeInstanceOf(AIMessage);
    expect(reply.text).toMatch(/^Simulated reply from kimi to: Describe a quiet harbor/);
    const expected = simulatedUsage('kimi', prompt);
    expect(reply.usage_metadata).toMatchObject({
      input_tokens: expected.prompt,
      output_tokens: expected.completion,
      total_tokens: expected.prompt + expected.completion,
    });
    expect(reply.response_metadata).toMatchObject({ finish_reason: 'stop' });
    // The request LangChain sent is a plain, non-streamed chat completion.
    const sent = h.sim.requests('kimi').at(-1)?.body as { stream?: boolean; messages: unknown[] };
    expect(sent.stream).toBe(false);
    expect(sent.messages).toEqual([{ role: 'user', content: prompt }]);
  });

  it('works with model "auto" and a system + human conversation', async () => {
    const reply = await chatModel(h.key).invoke([
      ['system', 'You are terse.'],
      ['human', 'Say hello'],
    ]);
    expect(reply.text).toMatch(/^Simulated reply from (deepseek|qwen|kimi|gpt-oss-120b) to: Say hello/);
    expect(reply.usage_metadata?.input_tokens).toBeGreaterThan(0);
    expect(reply.usage_metadata?.output_tokens).toBeGreaterThan(0);
  });

  it('a 402 rejects with the openai SDK APIError LangChain passes through: status 402, code insufficient_balance', async () => {
    const { key } = await h.newAccount('0');
    const err = await chatModel(key)
      .invoke('hi')
      .catch((e: unknown) => e);
    // Not a subclass: openai's generic APIError is what a 402 maps to.
    expect(Object.getPrototypeOf(err)).toBe(OpenAI.APIError.prototype);
    const apiError = err as InstanceType<typeof OpenAI.APIError>;
    expect(apiError.status).toBe(402);
    expect(apiError.code).toBe('insufficient_balance');
    expect(apiError.type).toBe('insufficient_balance');
  });

  it('a 401 rejects with AuthenticationError, tagged with LangChain error code MODEL_AUTHENTICATION', async () => {
    const err = await chatModel('sk-svc-00000000000000000000000000000000')
      .invoke('hi')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((err as InstanceType<typeof OpenAI.AuthenticationError>).code).toBe('invalid_api_key');
    expect((err as { lc_error_code?: string }).lc_error_code).toBe('MODEL_AUTHENTICATION');
  });

  it('never tried the network beyond loopback (no tiktoken download, no tracing)', () => {
    expect(network.refused).toEqual([]);
  });
});
