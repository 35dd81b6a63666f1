import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { AIMessageChunk } from '@langchain/core/messages';
import { ChatOpenAI } from '@langchain/openai';
import { streamText } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Harness } from '../helpers/harness.js';
import { guardNetwork, type StreamChunk, startListening, timeTool, weatherTool } from './compat-helpers.js';

/**
 * Streamed answers (STREAMING=on) through a running Tollgate (real sockets), read by the client libraries
 * applications use — the openai SDK, LangChain, the Vercel AI SDK — on each wire format: one
 * OpenAI-compatible provider, Anthropic Messages (prov-claude) and Gemini (prov-gemini), all served by the
 * simulator. The simulator is deterministic, so a streamed answer must carry exactly the text and the
 * usage of the same request answered whole; the account must move by exactly what the bill chunk says.
 */

let h: Harness;
let baseURL: string;
let network: ReturnType<typeof guardNetwork>;

beforeAll(async () => {
  vi.stubEnv('LANGSMITH_TRACING', 'false');
  vi.stubEnv('LANGCHAIN_TRACING_V2', 'false');
  network = guardNetwork();
  ({ h, baseURL } = await startListening({ env: { STREAMING: 'on' } }));
});
afterAll(async () => {
  network.restore();
  vi.unstubAllEnvs();
  await h.close();
});

/** The chunk fields Tollgate adds to OpenAI's (the bill). */
type Billed = OpenAI.Chat.Completions.ChatCompletionChunk & Pick<StreamChunk, 'meta'>;

function nanoOf(usd: number): number {
  return Math.round(usd * 1e9);
}

describe.each([
  ['prov-deepseek', 'deepseek'],
  ['prov-claude', 'claude'],
  ['prov-gemini', 'gemini'],
] as const)('streaming on %s', (provider, slug) => {
  let key: string;
  let accountId: string;
  let client: OpenAI;
  beforeAll(async () => {
    ({ key, accountId } = await h.newAccount('10'));
    client = new OpenAI({ apiKey: key, baseURL, maxRetries: 0 });
  });
  afterAll(async () => {
    expect(await h.server.store.openHoldsNano(accountId)).toBe(0);
    expect((await h.server.store.ledgerCheck()).ok).toBe(true);
  });

  /** The same request answered whole: what the stream must carry. */
  async function whole(content: string) {
    const completion = await client.chat.completions.create({
      model: provider,
      messages: [{ role: 'user', content }],
    });
    return completion as OpenAI.Chat.Completions.ChatCompletion & Pick<StreamChunk, 'meta'>;
  }

  it.each([
    ['with stream_options.include_usage', true],
    ['without stream_options', false],
  ])(
    'openai SDK create({stream: true}) %s: the text and usage of the whole answer, billed exactly by the last chunk',
    async (_what, includeUsage) => {
      const content = `Tell me about lanterns ${includeUsage ? 'at dusk' : 'at dawn'}`;
      const expected = await whole(content);
      const before = await h.balanceNano(accountId);
      const stream = await client.chat.completions.create({
        model: provider,
        messages: [{ role: 'user', content }],
        stream: true,
        ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
      });
      const chunks: Billed[] = [];
      for await (const chunk of stream) chunks.push(chunk as Billed);

      const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
      expect(text).toBe(expected.choices[0]?.message.content);
      expect(text).toMatch(new RegExp(`^Simulated reply from ${slug} to: ${content}`));
      // It came as a stream: several content chunks, the role in the first, a finish chunk, from an
      // upstream asked to stream.
      expect(chunks.filter((c) => (c.choices[0]?.delta.content ?? '') !== '').length).toBeGreaterThan(2);
      expect(chunks[0]?.choices[0]?.delta.role).toBe('assistant');
      expect(chunks.filter((c) => c.choices[0]?.delta.role !== undefined)).toHaveLength(1);
      const finish = chunks.at(includeUsage ? -2 : -1);
      expect(finish?.choices).toEqual([{ index: 0, delta: {}, finish_reason: 'stop' }]);
      expect(h.sim.requests(slug).at(-1)?.stream).toBe(true);
      // Before the last chunk, OpenAI writes `usage: null` when usage was asked for, and nothing otherwise.
      for (const chunk of chunks.slice(0, -1)) {
        if (includeUsage) expect(chunk.usage).toBeNull();
        else expect(chunk).not.toHaveProperty('usage');
        expect(chunk).not.toHaveProperty('meta');
      }

      // The bill comes last, asked for or not: the upstream's counts, the cost, and the balance. As
      // OpenAI sends usage: in a chunk with `choices: []` when asked for; else on the finish chunk, so
      // that no chunk has an empty `choices`.
      const last = chunks.at(-1) as Billed;
      if (includeUsage) expect(last.choices).toEqual([]);
      else expect(chunks.every((c) => c.choices.length > 0)).toBe(true);
      expect(last.usage).toMatchObject({
        prompt_tokens: expected.usage?.prompt_tokens,
        completion_tokens: expected.usage?.completion_tokens,
        total_tokens: expected.usage?.total_tokens,
      });
      const meta = last.meta as NonNullable<StreamChunk['meta']>;
      expect(meta.provider).toBe(provider);
      expect(meta.cost).toEqual(expected.meta?.cost);
      expect((last.usage as unknown as { cost: number }).cost).toBe(
        (nanoOf(meta.cost.input) + nanoOf(meta.cost.output)) / 1e9,
      );
      const after = await h.balanceNano(accountId);
      expect(before - after).toBe(nanoOf(meta.cost.total));
      expect(nanoOf(meta.balance)).toBe(after);
      // The upstream reported its usage, so nothing was estimated.
      const [row] = await h.server.store.listUsage(accountId, { limit: 1 });
      expect(row).toMatchObject({
        requestId: last.id,
        status: 'ok',
        usageEstimated: false,
        clientGone: false,
        promptTokens: expected.usage?.prompt_tokens,
        completionTokens: expected.usage?.completion_tokens,
      });
    },
  );

  it('openai SDK chat.completions.stream() with tools: finalChatCompletion() assembles the calls', async () => {
    const before = await h.balanceNano(accountId);
    const stream = client.chat.completions.stream({
      model: provider,
      messages: [{ role: 'user', content: 'Use get_weather and get_time for Oslo' }],
      tools: [weatherTool, timeTool],
    });
    const billed: Billed[] = [];
    let callPieces = 0;
    stream.on('chunk', (chunk) => {
      if ((chunk as Billed).meta !== undefined) billed.push(chunk as Billed);
      if (chunk.choices[0]?.delta.tool_calls !== undefined) callPieces++;
    });
    const final = await stream.finalChatCompletion();
    const choice = final.choices[0];
    expect(choice?.finish_reason).toBe('tool_calls');
    const calls = (choice?.message.tool_calls ??
      []) as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall[];
    expect(calls.map((c) => c.function.name)).toEqual(['get_weather', 'get_time']);
    for (const call of calls) {
      expect(call.type).toBe('function');
      expect(call.id).toMatch(/\S/);
      expect(JSON.parse(call.function.arguments)).toEqual({ city: 'Oslo' });
    }
    expect(new Set(calls.map((c) => c.id)).size).toBe(2);
    // The calls came in pieces: the simulator splits every streamed string, arguments included (Gemini
    // sends each call whole, as the real API does), and the SDK put them together.
    expect(callPieces).toBeGreaterThan(slug === 'gemini' ? 1 : 4);
    expect(billed).toHaveLength(1);
    const meta = billed[0]?.meta as NonNullable<StreamChunk['meta']>;
    expect(meta.provider).toBe(provider);
    expect(before - (await h.balanceNano(accountId))).toBe(nanoOf(meta.cost.total));
    expect(final.usage?.completion_tokens).toBeGreaterThan(0);
  });

  it('openai SDK: an upstream cut mid-stream throws an APIError while iterating, after the bill', async () => {
    const before = await h.balanceNano(accountId);
    h.sim.setFault(slug, { kind: 'cut', afterChunks: 3, times: 1 });
    const stream = await client.chat.completions.create({
      model: provider,
      messages: [{ role: 'user', content: 'Tell me a long story' }],
      stream: true,
    });
    const chunks: Billed[] = [];
    const error = await (async () => {
      for await (const chunk of stream) chunks.push(chunk as Billed);
    })().then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error).toMatchObject({ code: 'provider_error', type: 'upstream_error' });
    expect(chunks.some((c) => (c.choices[0]?.delta.content ?? '') !== '')).toBe(true);
    // No choice finished: the bill rides on an empty delta of choice 0, never on `choices: []`.
    const bill = chunks.at(-1) as Billed;
    expect(bill.choices).toEqual([{ index: 0, delta: {}, finish_reason: null }]);
    expect(bill.meta?.provider).toBe(provider);
    expect(before - (await h.balanceNano(accountId))).toBe(nanoOf(bill.meta?.cost.total ?? Number.NaN));
    expect(h.sim.streams(slug).at(-1)?.outcome).toBe('cut');
  });

  it('LangChain ChatOpenAI.stream(): the chunks concatenate to the text, with the usage', async () => {
    const content = 'Describe a quiet harbor';
    const expected = await whole(content);
    const before = await h.balanceNano(accountId);
    const model = new ChatOpenAI({ model: provider, apiKey: key, configuration: { baseURL }, maxRetries: 0 });
    let text = '';
    let all: AIMessageChunk | undefined;
    let pieces = 0;
    for await (const chunk of await model.stream(content)) {
      if (typeof chunk.content === 'string' && chunk.content !== '') pieces++;
      text += typeof chunk.content === 'string' ? chunk.content : '';
      all = all === undefined ? chunk : all.concat(chunk);
    }
    expect(pieces).toBeGreaterThan(2);
    expect(text).toBe(expected.choices[0]?.message.content);
    expect(all?.usage_metadata).toMatchObject({
      input_tokens: expected.usage?.prompt_tokens,
      output_tokens: expected.usage?.completion_tokens,
    });
    expect(h.sim.requests(slug).at(-1)?.stream).toBe(true);
    expect(before - (await h.balanceNano(accountId))).toBe(nanoOf(expected.meta?.cost.total ?? Number.NaN));
  });

  it('Vercel AI streamText (openai-compatible provider): the text, the usage and the bill arrive', async () => {
    const content = 'Describe a green hill';
    const expected = await whole(content);
    const before = await h.balanceNano(accountId);
    const tollgate = createOpenAICompatible({
      name: 'tollgate',
      baseURL,
      apiKey: key,
      includeUsage: true,
      metadataExtractor: {
        extractMetadata: async () => undefined,
        // Tollgate's bill chunk carries `meta`: handed on as `providerMetadata.tollgate`.
        createStreamExtractor: () => {
          let meta: StreamChunk['meta'];
          return {
            processChunk(chunk: unknown) {
              meta ??= (chunk as StreamChunk).meta;
            },
            buildMetadata: () => (meta ? { tollgate: { ...meta } } : undefined),
          };
        },
      },
    });
    const result = streamText({
      model: tollgate(provider),
      prompt: content,
      maxRetries: 0,
      onError: () => {},
    });
    const parts: string[] = [];
    for await (const part of result.textStream) parts.push(part);
    expect(parts.length).toBeGreaterThan(2);
    expect(parts.join('')).toBe(expected.choices[0]?.message.content);
    expect(await result.text).toBe(expected.choices[0]?.message.content);
    const usage = await result.usage;
    expect(usage.inputTokens).toBe(expected.usage?.prompt_tokens);
    expect(usage.outputTokens).toBe(expected.usage?.completion_tokens);
    expect(await result.finishReason).toBe('stop');
    const meta = (await result.providerMetadata)?.tollgate as unknown as NonNullable<StreamChunk['meta']>;
    expect(meta.provider).toBe(provider);
    expect(meta.cost).toEqual(expected.meta?.cost);
    expect(before - (await h.balanceNano(accountId))).toBe(nanoOf(meta.cost.total));
  });
});

describe('client libraries and the network', () => {
  it('never tried the network beyond loopback', () => {
    expect(network.refused).toEqual([]);
  });
});
