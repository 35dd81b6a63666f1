import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { APICallError, generateText } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Harness } from '../helpers/harness.js';
import { guardNetwork, simulatedUsage, startListening } from './compat-helpers.js';

let h: Harness;
let baseURL: string;
let network: ReturnType<typeof guardNetwork>;

interface TollgateMeta {
  provider: string;
  cost: { input: number; output: number; total: number };
  balance: number;
}

/**
 * How to point the AI SDK at Tollgate. The metadata extractor hands Tollgate's `meta` (provider, cost,
 * balance) to `providerMetadata.tollgate`.
 */
function tollgate(apiKey: string) {
  return createOpenAICompatible({
    name: 'tollgate',
    baseURL,
    apiKey,
    metadataExtractor: {
      extractMetadata: async ({ parsedBody }) => {
        const meta = (parsedBody as { meta?: TollgateMeta }).meta;
        return meta ? { tollgate: { ...meta } } : undefined;
      },
      createStreamExtractor: () => ({ processChunk() {}, buildMetadata: () => undefined }),
    },
  });
}

beforeAll(async () => {
  network = guardNetwork();
  ({ h, baseURL } = await startListening());
});
afterAll(async () => {
  network.restore();
  await h.close();
});

describe('Vercel AI SDK (createOpenAICompatible + generateText) against a running Tollgate', () => {
  it('generateText with model "auto" returns the text and the usage the upstream reported', async () => {
    const prompt = 'Name three lanterns';
    const result = await generateText({ model: tollgate(h.key)('auto'), prompt, maxRetries: 0 });
    const meta = result.providerMetadata?.tollgate as unknown as TollgateMeta;
    expect(meta.provider).toMatch(/^prov-(deepseek|qwen|kimi|gpt-oss-120b)$/);
    const slug = h.slug(meta.provider as Parameters<Harness['slug']>[0]);
    expect(result.text).toMatch(new RegExp(`^Simulated reply from ${slug} to: ${prompt}`));
    const expected = simulatedUsage(slug, prompt);
    expect(result.usage.inputTokens).toBe(expected.prompt);
    expect(result.usage.outputTokens).toBe(expected.completion);
    expect(result.usage.totalTokens).toBe(expected.prompt + expected.completion);
    expect(result.finishReason).toBe('stop');
    expect(meta.cost.total).toBe(meta.cost.input + meta.cost.output);
    expect(Math.round(meta.balance * 1e9)).toBe(await h.balanceNano());
    // The AI SDK sent a plain chat completion: no stream flag set, the prompt as one user message.
    const sent = h.sim.requests(slug).at(-1)?.body as { stream?: boolean; messages: unknown[] };
    expect(sent.stream).toBe(false);
    expect(sent.messages).toEqual([{ role: 'user', content: prompt }]);
  });

  it('maxOutputTokens becomes the cap: finish reason "length"', async () => {
    const result = await generateText({
      model: tollgate(h.key).chatModel('prov-mistral'),
      prompt: 'Count to ten please, slowly and with words',
      maxOutputTokens: 3,
      maxRetries: 0,
    });
    expect(result.finishReason).toBe('length');
    expect(result.usage.outputTokens).toBe(3);
    expect((result.providerMetadata?.tollgate as unknown as TollgateMeta).provider).toBe('prov-mistral');
  });

  it('a 402 throws APICallError with statusCode 402, not retryable, and the insufficient_balance error body', async () => {
    const { key } = await h.newAccount('0');
    const err = await generateText({ model: tollgate(key)('auto'), prompt: 'hi', maxRetries: 0 }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(APICallError);
    expect(APICallError.isInstance(err)).toBe(true);
    const callError = err as APICallError;
    expect(callError.statusCode).toBe(402);
    expect(callError.isRetryable).toBe(false);
    expect(callError.url).toBe(`${baseURL}/chat/completions`);
    expect(callError.data).toMatchObject({
      error: { code: 'insufficient_balance', type: 'insufficient_balance' },
    });
    expect(callError.message).toBe((callError.data as { error: { message: string } }).error.message);
  });

  it('never tried the network beyond loopback', () => {
    expect(network.refused).toEqual([]);
  });
});
