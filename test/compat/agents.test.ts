import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { AIMessage, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { ChatOpenAI } from '@langchain/openai';
import { generateObject, generateText, stepCountIs, tool } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import type { Harness } from '../helpers/harness.js';
import { guardNetwork, startListening, timeTool, weatherTool } from './compat-helpers.js';

/**
 * Agents through a running Tollgate (real sockets), on each wire format: one OpenAI-compatible provider,
 * Anthropic Messages (prov-claude) and Gemini generateContent (prov-gemini), all served by the simulator.
 * Each client library is used as an application would use it; every answer's `meta.cost.total` is
 * recorded off the wire, and each provider's account must have moved by exactly their sum.
 */

let h: Harness;
let baseURL: string;
let network: ReturnType<typeof guardNetwork>;
/** `meta.cost.total` of every chat completion answered, by API key, as read off the wire. */
const billed = new Map<string, number[]>();
let unwrapFetch: () => void;

/** Records each chat completion's `meta.cost.total` (nanodollars) under the key that paid for it. */
function recordCosts(): () => void {
  const inner = globalThis.fetch;
  globalThis.fetch = async (input: string | URL | Request, init?: RequestInit) => {
    const response = await inner(input, init);
    const url = input instanceof Request ? input.url : String(input);
    if (url.endsWith('/chat/completions') && response.ok) {
      const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
      const key = (headers.get('authorization') ?? '').replace(/^Bearer /, '');
      const body = (await response.clone().json()) as { meta?: { cost: { total: number } } };
      if (body.meta) {
        const list = billed.get(key) ?? [];
        list.push(Math.round(body.meta.cost.total * 1e9));
        billed.set(key, list);
      }
    }
    return response;
  };
  return () => {
    globalThis.fetch = inner;
  };
}

beforeAll(async () => {
  vi.stubEnv('LANGSMITH_TRACING', 'false');
  vi.stubEnv('LANGCHAIN_TRACING_V2', 'false');
  network = guardNetwork();
  ({ h, baseURL } = await startListening());
  unwrapFetch = recordCosts();
});
afterAll(async () => {
  unwrapFetch();
  network.restore();
  vi.unstubAllEnvs();
  await h.close();
});

// A 1×1 PNG.
const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

interface Meta {
  provider: string;
  cost: { input: number; output: number; total: number };
  balance: number;
}

describe.each([
  ['prov-deepseek', 'deepseek'],
  ['prov-claude', 'claude'],
  ['prov-gemini', 'gemini'],
] as const)('agents on %s', (provider, slug) => {
  let key: string;
  let accountId: string;
  let client: OpenAI;
  const startNano = 10_000_000_000;
  beforeAll(async () => {
    ({ key, accountId } = await h.newAccount('10'));
    client = new OpenAI({ apiKey: key, baseURL, maxRetries: 0 });
  });
  afterAll(async () => {
    // Every call of this provider's account is billed exactly what its answer said.
    const sum = (billed.get(key) ?? []).reduce((a, b) => a + b, 0);
    expect(sum).toBeGreaterThan(0);
    expect(startNano - (await h.balanceNano(accountId))).toBe(sum);
    expect(await h.server.store.openHoldsNano(accountId)).toBe(0);
  });

  it('openai SDK: a full tool round trip ends in an answer quoting the tool result', async () => {
    const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'What is the weather in Paris?' },
    ];
    const first = await client.chat.completions.create({ model: provider, messages, tools: [weatherTool] });
    const choice = first.choices[0];
    expect(choice?.finish_reason).toBe('tool_calls');
    // Claude often says a sentence before its calls (the simulator does too); the others answer with calls only.
    if (slug === 'claude') expect(choice?.message.content).toBe("I'll call get_weather.");
    else expect(choice?.message.content).toBeNull();
    const calls = choice?.message.tool_calls ?? [];
    expect(calls).toHaveLength(1);
    const call = calls[0] as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall;
    expect(call.type).toBe('function');
    expect(call.function.name).toBe('get_weather');
    expect(JSON.parse(call.function.arguments)).toEqual({ city: 'Paris' });
    expect(call.id).toMatch(/\S/);
    expect((first as unknown as { meta: Meta }).meta.provider).toBe(provider);

    messages.push(choice?.message as OpenAI.Chat.Completions.ChatCompletionMessageParam);
    messages.push({ role: 'tool', tool_call_id: call.id, content: 'Sunny, 21 degrees' });
    const second = await client.chat.completions.create({ model: provider, messages, tools: [weatherTool] });
    expect(second.choices[0]?.finish_reason).toBe('stop');
    expect(second.choices[0]?.message.tool_calls ?? []).toEqual([]);
    expect(second.choices[0]?.message.content).toContain('Sunny, 21 degrees');
  });

  it('openai SDK: parallel tool calls, each answered, in one turn', async () => {
    const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'Use get_weather and get_time for Oslo' },
    ];
    const first = await client.chat.completions.create({
      model: provider,
      messages,
      tools: [weatherTool, timeTool],
    });
    const calls = (first.choices[0]?.message.tool_calls ??
      []) as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall[];
    expect(calls.map((c) => c.function.name)).toEqual(['get_weather', 'get_time']);
    expect(new Set(calls.map((c) => c.id)).size).toBe(2);
    messages.push(first.choices[0]?.message as OpenAI.Chat.Completions.ChatCompletionMessageParam);
    for (const c of calls)
      messages.push({ role: 'tool', tool_call_id: c.id, content: `${c.function.name} result` });
    const second = await client.chat.completions.create({
      model: provider,
      messages,
      tools: [weatherTool, timeTool],
    });
    expect(second.choices[0]?.message.content).toContain('get_weather result');
    expect(second.choices[0]?.message.content).toContain('get_time result');
  });

  it('openai SDK: a forced tool choice calls that tool', async () => {
    const completion = await client.chat.completions.create({
      model: provider,
      messages: [{ role: 'user', content: 'Tell me about Rome' }],
      tools: [weatherTool, timeTool],
      tool_choice: { type: 'function', function: { name: 'get_time' } },
    });
    const calls = (completion.choices[0]?.message.tool_calls ??
      []) as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall[];
    expect(calls.map((c) => c.function.name)).toEqual(['get_time']);
  });

  it('openai SDK: json_schema output parses and has the schema’s fields', async () => {
    const completion = await client.chat.completions.create({
      model: provider,
      messages: [{ role: 'user', content: 'Describe a city called Lyon' }],
      response_format: {
        type: 'json_schema',
        json_schema: {
          name: 'city',
          strict: true,
          schema: {
            type: 'object',
            properties: { name: { type: 'string' }, population: { type: 'integer' } },
            required: ['name', 'population'],
            additionalProperties: false,
          },
        },
      },
    });
    const parsed = JSON.parse(completion.choices[0]?.message.content ?? '') as Record<string, unknown>;
    expect(typeof parsed.name).toBe('string');
    expect(Number.isInteger(parsed.population)).toBe(true);
  });

  it('openai SDK: an image part and the developer role', async () => {
    const completion = await client.chat.completions.create({
      model: provider,
      messages: [
        { role: 'developer', content: 'Answer in one line.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in this picture?' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
          ],
        },
      ],
    });
    expect(completion.choices[0]?.message.content).toMatch(
      new RegExp(`^Simulated reply from ${slug} \\(saw 1 image\\)`),
    );
    const sent = JSON.stringify(h.sim.requests(slug).at(-1)?.body);
    expect(sent).toContain(PNG);
    expect(sent).toContain('Answer in one line.');
  });

  it('LangChain: bindTools + ToolMessage round trip', async () => {
    const model = new ChatOpenAI({
      model: provider,
      apiKey: key,
      configuration: { baseURL },
      maxRetries: 0,
      disableStreaming: true,
    });
    const withTools = model.bindTools([weatherTool]);
    const question = new HumanMessage('What is the weather in Madrid?');
    const first = await withTools.invoke([question]);
    expect(first.tool_calls).toHaveLength(1);
    const call = first.tool_calls?.[0];
    expect(call?.name).toBe('get_weather');
    expect(call?.args).toEqual({ city: 'Madrid' });
    const answer = await withTools.invoke([
      question,
      first,
      new ToolMessage({ tool_call_id: call?.id as string, content: 'Rain, 9 degrees' }),
    ]);
    expect(answer).toBeInstanceOf(AIMessage);
    expect(answer.text).toContain('Rain, 9 degrees');
  });

  it.each(['functionCalling', 'jsonSchema', 'jsonMode'] as const)(
    'LangChain: withStructuredOutput(method %s)',
    async (method) => {
      const model = new ChatOpenAI({
        model: provider,
        apiKey: key,
        configuration: { baseURL },
        maxRetries: 0,
        disableStreaming: true,
      });
      // JSON mode promises an object, not a shape: it is checked as one.
      const schema =
        method === 'jsonMode'
          ? z.record(z.string(), z.unknown())
          : z.object({ title: z.string(), pages: z.number().int() });
      const structured = model.withStructuredOutput(schema, { name: 'book', method });
      // JSON mode on OpenAI-compatible hosts needs the word "JSON" in the prompt (as OpenAI's own API does).
      const out = (await structured.invoke('Describe a book called Dune, as JSON')) as Record<
        string,
        unknown
      >;
      expect(out).toBeTypeOf('object');
      if (method !== 'jsonMode') {
        expect(typeof out.title).toBe('string');
        expect(Number.isInteger(out.pages)).toBe(true);
      }
    },
  );

  it('Vercel AI: generateText with a tool over two steps, and generateObject with a zod schema', async () => {
    const tollgate = createOpenAICompatible({
      name: 'tollgate',
      baseURL,
      apiKey: key,
      supportsStructuredOutputs: true,
    });
    const execute = vi.fn(async ({ city }: { city: string }) => ({ city, forecast: 'Fog, 12 degrees' }));
    const result = await generateText({
      model: tollgate(provider),
      prompt: 'What is the weather in London?',
      tools: {
        get_weather: tool({
          description: 'Current weather of a city',
          inputSchema: z.object({ city: z.string() }),
          execute,
        }),
      },
      stopWhen: stepCountIs(2),
      maxRetries: 0,
    });
    expect(result.steps).toHaveLength(2);
    expect(execute).toHaveBeenCalledWith({ city: 'London' }, expect.anything());
    expect(result.text).toContain('Fog, 12 degrees');

    const object = await generateObject({
      model: tollgate(provider),
      schema: z.object({ name: z.string(), tags: z.array(z.string()), rating: z.number() }),
      prompt: 'Review a restaurant called Bistro',
      maxRetries: 0,
    });
    expect(typeof object.object.name).toBe('string');
    expect(Array.isArray(object.object.tags)).toBe(true);
    expect(typeof object.object.rating).toBe('number');
  });
});

describe('what a wire format cannot do is refused before any upstream call or charge', () => {
  it.each([
    ['n: 2 to Anthropic', 'prov-claude', 'claude', { n: 2 }, 'n'],
    ['logprobs to Anthropic', 'prov-claude', 'claude', { logprobs: true }, 'logprobs'],
    [
      'an image by URL to Gemini',
      'prov-gemini',
      'gemini',
      {
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'What is this?' },
              { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } },
            ],
          },
        ],
      },
      'messages[0].content[1]',
    ],
  ])('%s → 400 unsupported_parameter', async (_what, provider, slug, extra, param) => {
    const { key, accountId } = await h.newAccount('1');
    const before = h.sim.requests(slug).length;
    const res = await fetch(`${baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ provider, messages: [{ role: 'user', content: 'Hello' }], ...extra }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as {
      error: { type: string; code: string; param: string; message: string };
    };
    expect(body.error).toMatchObject({ type: 'invalid_request_error', code: 'unsupported_parameter', param });
    expect(body.error.message).toContain(provider);
    expect(h.sim.requests(slug).length).toBe(before);
    expect(await h.balanceNano(accountId)).toBe(1_000_000_000);
  });

  it('under auto routing a provider that cannot honour the request is passed over', async () => {
    const { h: auto, baseURL: autoURL } = await startListening({
      env: { AUTO_PROVIDERS: 'prov-claude,prov-qwen' },
    });
    try {
      for (let i = 0; i < 4; i++) {
        const res = await fetch(`${autoURL}/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${auto.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ messages: [{ role: 'user', content: 'Hello' }], n: 2 }),
        });
        expect(res.status).toBe(200);
        const body = (await res.json()) as { choices: unknown[]; meta: Meta };
        expect(body.meta.provider).toBe('prov-qwen');
        expect(body.choices).toHaveLength(2);
      }
      expect(auto.sim.requests('claude')).toHaveLength(0);
    } finally {
      await auto.close();
    }
  });
});
