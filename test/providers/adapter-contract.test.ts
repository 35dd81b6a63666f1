/**
 * The contract every wire-format adapter keeps, checked on the real path against the simulator:
 * `refusal` → `buildRequest` → the upstream client (`send` / `openStream`) → `parseResponse` / the stream
 * parser. One table of cases (`CASES`), run for each format of `FORMATS`; what a format may do differently
 * is a capability column of `FORMATS`, never a copy of a case. Wire shapes (what exactly goes on the wire,
 * recorded upstream answers) stay in each adapter's own tests.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  adapterFor,
  type ChatMessage,
  type ChatResult,
  createUpstreamClient,
  type ProviderAdapter,
  type ProviderConfig,
  type ProviderName,
  type StreamDelta,
  type StreamParser,
  type ToolDefinition,
  type UpstreamChatRequest,
  type UpstreamClient,
  UpstreamError,
  type UpstreamFailureKind,
  type WireFormat,
} from '../../src/providers/index.js';
import { type SimFault, type Simulator, startSimulator } from '../../src/simulator/index.js';
import { chatRequest, providerConfig } from './provider-test-helpers.js';
import { type AssembledChoice, assemble } from './stream-test-helpers.js';

/** One wire format: the provider that speaks it, and what the format declares it can do. */
interface FormatRow {
  format: WireFormat;
  provider: ProviderName;
  model: string;
  /**
   * `n` > 1: `many`, the answer has that many choices; `one`, the format has one answer per call and
   * `refusal` names `n` (before any upstream call).
   */
  choicesPerCall: 'many' | 'one';
  /**
   * Cases this format fails today, each with the bug that makes it fail: run as `it.fails`, so the case
   * turns red once the bug is fixed (and the entry should go).
   */
  knownBugs?: Partial<Record<CaseId, string>>;
}

const FORMATS: readonly FormatRow[] = [
  { format: 'openai-compatible', provider: 'prov-deepseek', model: 'deepseek-chat', choicesPerCall: 'many' },
  { format: 'anthropic', provider: 'prov-claude', model: 'claude-sonnet-4-5', choicesPerCall: 'one' },
  {
    format: 'gemini',
    provider: 'prov-gemini',
    model: 'gemini-2.5-flash',
    choicesPerCall: 'many',
  },
];

/** What a case gets: the format's row, its provider (pointing at the simulator) and the calls. */
interface Contract {
  row: FormatRow;
  provider: ProviderConfig;
  adapter: ProviderAdapter;
  slug: string;
  sim: Simulator;
  /** A call accepted by `refusal`, sent and read whole. */
  call(request: UpstreamChatRequest): Promise<ChatResult>;
  /** A call accepted by `refusal`, streamed: its deltas and parser, and how the stream ended. */
  stream(request: UpstreamChatRequest): Promise<Streamed>;
  /** The `UpstreamError` the call fails with, streamed or not. */
  failure(request: UpstreamChatRequest, stream: boolean): Promise<UpstreamError>;
}

interface Streamed {
  deltas: StreamDelta[];
  parser: StreamParser;
  /** The error the stream's iterator (or the parser) threw, if it did. */
  error: UpstreamError | undefined;
}

type CaseId =
  | 'text'
  | 'cap'
  | 'tools'
  | 'json-schema'
  | 'system-image'
  | 'n'
  | 'error-status'
  | 'bad-2xx'
  | 'stream-text'
  | 'stream-cap'
  | 'stream-tools'
  | 'no-usage'
  | 'stream-no-usage'
  | 'stream-error-event'
  | 'stream-cut';

interface Case {
  id: CaseId;
  name: string;
  run(c: Contract): Promise<void>;
}

const CLIENT_TIMEOUT_MS = 5_000;

/** The one choice of an assembled stream. */
function only(deltas: readonly StreamDelta[]): AssembledChoice {
  const choices = assemble(deltas);
  expect(choices.size).toBe(1);
  return choices.get(0) as AssembledChoice;
}

const user = (content: string): ChatMessage => ({ role: 'user', content });

const TOOLS: ToolDefinition[] = [
  {
    name: 'get_weather',
    description: 'The weather in a city.',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
  {
    name: 'get_time',
    description: 'The local time in a city.',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' }, format: { type: 'string', enum: ['12h', '24h'] } },
      required: ['city', 'format'],
    },
  },
];

/** Offers both tools and asks for the second by name (the simulator calls the tools a user names). */
const TOOL_REQUEST = chatRequest({
  messages: [user('Please use get_time to tell me the time in Paris')],
  tools: TOOLS,
  toolChoice: { type: 'auto' },
});

const TOOL_RESULT = 'It is 14:05 in Paris';

/** A 1×1 PNG. */
const PNG_1X1 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

const STATUS_FAILURES: readonly {
  status: number;
  kind: UpstreamFailureKind;
  retryAfter?: number;
}[] = [
  { status: 429, kind: 'rate_limited', retryAfter: 7 },
  { status: 500, kind: 'server_error' },
  { status: 401, kind: 'auth' },
  { status: 400, kind: 'rejected' },
];

function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const CASES: readonly Case[] = [
  {
    id: 'text',
    name: 'plain text: one choice of text, finish stop, usage and model reported',
    async run(c) {
      const result = await c.call(chatRequest());
      expect(result.choices).toHaveLength(1);
      const [choice] = result.choices;
      expect(choice?.text).toEqual(expect.any(String));
      expect(choice?.text?.length).toBeGreaterThan(0);
      expect(choice?.toolCalls).toEqual([]);
      expect(choice?.finishReason).toBe('stop');
      expect(result.usage.promptTokens).toBeGreaterThan(0);
      expect(result.usage.completionTokens).toBeGreaterThan(0);
      expect(result.model).toEqual(expect.any(String));
      expect(result.model?.length).toBeGreaterThan(0);
    },
  },
  {
    id: 'cap',
    name: 'a small cap: finish length, no more completion tokens than the cap',
    async run(c) {
      const result = await c.call(chatRequest({ maxTokens: 3 }));
      expect(result.choices).toHaveLength(1);
      expect(result.choices[0]?.finishReason).toBe('length');
      expect(result.usage.completionTokens).toBeGreaterThan(0);
      expect(result.usage.completionTokens).toBeLessThanOrEqual(3);
    },
  },
  {
    id: 'tools',
    name: 'tools: the named tool is called with JSON object arguments, and its result is quoted after',
    async run(c) {
      const first = await c.call(TOOL_REQUEST);
      expect(first.choices).toHaveLength(1);
      const choice = first.choices[0];
      expect(choice?.finishReason).toBe('tool_calls');
      expect(choice?.toolCalls).toHaveLength(1);
      const call = choice?.toolCalls[0];
      expect(call?.id).toEqual(expect.any(String));
      expect(call?.id.length).toBeGreaterThan(0);
      expect(call?.name).toBe('get_time');
      const args: unknown = JSON.parse(call?.arguments ?? '');
      expect(isJsonObject(args)).toBe(true);
      expect(args).toHaveProperty('city');
      if (call === undefined) throw new Error('no tool call');

      const second = await c.call({
        ...TOOL_REQUEST,
        messages: [
          ...TOOL_REQUEST.messages,
          { role: 'assistant', content: choice?.text ?? null, toolCalls: [call] },
          { role: 'tool', toolCallId: call.id, name: call.name, content: TOOL_RESULT },
        ],
      });
      expect(second.choices).toHaveLength(1);
      expect(second.choices[0]?.toolCalls).toEqual([]);
      expect(second.choices[0]?.finishReason).toBe('stop');
      expect(second.choices[0]?.text).toContain(TOOL_RESULT);
    },
  },
  {
    id: 'json-schema',
    name: 'response_format json_schema: the text is JSON with the required keys',
    async run(c) {
      const result = await c.call(
        chatRequest({
          messages: [user('The weather in Oslo, as JSON')],
          responseFormat: {
            type: 'json_schema',
            name: 'weather',
            strict: true,
            schema: {
              type: 'object',
              properties: {
                city: { type: 'string' },
                temperature: { type: 'number' },
                sky: { type: 'string', enum: ['clear', 'cloudy'] },
              },
              required: ['city', 'temperature', 'sky'],
              additionalProperties: false,
            },
          },
        }),
      );
      expect(result.choices).toHaveLength(1);
      expect(result.choices[0]?.finishReason).toBe('stop');
      const value: unknown = JSON.parse(result.choices[0]?.text ?? '');
      expect(isJsonObject(value)).toBe(true);
      expect(Object.keys(value as object).sort()).toEqual(['city', 'sky', 'temperature']);
      expect(value).toMatchObject({ city: expect.any(String), temperature: expect.any(Number) });
    },
  },
  {
    id: 'system-image',
    name: 'system and developer messages and an inline image are accepted, reach the upstream, and are answered',
    async run(c) {
      const request = chatRequest({
        messages: [
          { role: 'system', content: 'You are terse.' },
          { role: 'developer', content: 'Answer in English.' },
          {
            role: 'user',
            content: [
              { type: 'text', text: 'What is in this picture?' },
              {
                type: 'image',
                image: { kind: 'data', mediaType: 'image/png', data: PNG_1X1 },
                detail: undefined,
              },
            ],
          },
        ],
      });
      expect(c.adapter.refusal(c.provider, request)).toBeUndefined();
      const result = await c.call(request);
      expect(result.choices).toHaveLength(1);
      expect(result.choices[0]?.finishReason).toBe('stop');
      // The simulated model says which media it saw.
      expect(result.choices[0]?.text).toContain('saw 1 image');
      const sent = JSON.stringify(c.sim.requests(c.slug).at(-1)?.body);
      expect(sent).toContain('You are terse.');
      expect(sent).toContain('Answer in English.');
      expect(sent).toContain(PNG_1X1);
    },
  },
  {
    id: 'n',
    name: 'n: 2 is answered with two choices or refused as n, as the format declares',
    async run(c) {
      const request = chatRequest({ n: 2 });
      const refusal = c.adapter.refusal(c.provider, request);
      if (c.row.choicesPerCall === 'one') {
        expect(refusal).toMatchObject({ param: 'n', message: expect.any(String) });
        return;
      }
      expect(refusal).toBeUndefined();
      const result = await c.call(request);
      expect(result.choices).toHaveLength(2);
      for (const choice of result.choices) {
        expect(choice.text?.length).toBeGreaterThan(0);
        expect(choice.finishReason).toBe('stop');
      }
      expect(result.choices[0]?.text).not.toBe(result.choices[1]?.text);
      // The stream carries the same two choices.
      const streamed = await c.stream(request);
      expect(streamed.error).toBeUndefined();
      const choices = assemble(streamed.deltas);
      expect([...choices.keys()].sort()).toEqual([0, 1]);
      expect(choices.get(0)?.text).toBe(result.choices[0]?.text);
      expect(choices.get(1)?.text).toBe(result.choices[1]?.text);
    },
  },
  {
    id: 'error-status',
    name: 'upstream errors by status, streamed or not: rate_limited (with Retry-After), server_error, auth, rejected',
    async run(c) {
      for (const { status, kind, retryAfter } of STATUS_FAILURES) {
        for (const stream of [false, true]) {
          const fault: SimFault = { kind: 'status', status, times: 1, ...(retryAfter ? { retryAfter } : {}) };
          c.sim.setFault(c.slug, fault);
          const error = await c.failure(chatRequest(), stream);
          expect({ status, stream, kind: error.kind }).toEqual({ status, stream, kind });
          expect(error.status).toBe(status);
          if (retryAfter !== undefined) expect(error.retryAfterMs).toBe(retryAfter * 1000);
        }
      }
    },
  },
  {
    id: 'bad-2xx',
    name: 'a 2xx that is not a readable answer is bad_response',
    async run(c) {
      for (const kind of ['garbage', 'null', 'no_choices'] as const) {
        c.sim.setFault(c.slug, { kind, times: 1 });
        const error = await c.failure(chatRequest(), false);
        expect({ fault: kind, kind: error.kind }).toEqual({ fault: kind, kind: 'bad_response' });
        expect(error.retryable).toBe(true);
      }
    },
  },
  {
    id: 'stream-text',
    name: 'streamed text: the same text, finish, usage and model as the answer not streamed, and done',
    async run(c) {
      const request = chatRequest();
      const whole = await c.call(request);
      const streamed = await c.stream(request);
      expect(streamed.error).toBeUndefined();
      const choice = only(streamed.deltas);
      // Actually streamed: the text came in several pieces.
      expect(streamed.deltas.filter((d) => d.type === 'text').length).toBeGreaterThan(1);
      expect(choice.text).toBe(whole.choices[0]?.text);
      expect(choice.finish).toBe(whole.choices[0]?.finishReason);
      expect(choice.toolCalls).toEqual([]);
      expect(streamed.parser.done()).toBe(true);
      expect(streamed.parser.usage()).toEqual(whole.usage);
      expect(streamed.parser.model()).toBe(whole.model);
    },
  },
  {
    id: 'stream-cap',
    name: 'streamed cap: finish length and the same usage as not streamed',
    async run(c) {
      const request = chatRequest({ maxTokens: 3 });
      const whole = await c.call(request);
      const streamed = await c.stream(request);
      expect(streamed.error).toBeUndefined();
      const choice = only(streamed.deltas);
      expect(choice.text).toBe(whole.choices[0]?.text ?? '');
      expect(choice.finish).toBe('length');
      expect(streamed.parser.done()).toBe(true);
      expect(streamed.parser.usage()).toEqual(whole.usage);
    },
  },
  {
    id: 'stream-tools',
    name: 'streamed tool call: assembles to the call not streamed (name, JSON-equal arguments)',
    async run(c) {
      const whole = await c.call(TOOL_REQUEST);
      const streamed = await c.stream(TOOL_REQUEST);
      expect(streamed.error).toBeUndefined();
      const choice = only(streamed.deltas);
      const expected = whole.choices[0];
      expect(choice.finish).toBe('tool_calls');
      expect(choice.finish).toBe(expected?.finishReason);
      expect(choice.text).toBe(expected?.text ?? '');
      expect(choice.toolCalls).toHaveLength(1);
      expect(choice.toolCalls[0]?.id.length).toBeGreaterThan(0);
      expect(choice.toolCalls[0]?.name).toBe(expected?.toolCalls[0]?.name);
      expect(JSON.parse(choice.toolCalls[0]?.arguments ?? '')).toEqual(
        JSON.parse(expected?.toolCalls[0]?.arguments ?? ''),
      );
      expect(streamed.parser.done()).toBe(true);
      expect(streamed.parser.usage()).toEqual(whole.usage);
    },
  },
  {
    id: 'no-usage',
    name: 'an upstream that reports no usage: usage not reported (undefined, never 0)',
    async run(c) {
      c.sim.setFault(c.slug, { kind: 'no_usage', times: 1 });
      const whole = await c.call(chatRequest());
      expect(whole.choices[0]?.finishReason).toBe('stop');
      expect(whole.choices[0]?.text?.length).toBeGreaterThan(0);
      expect(whole.usage.promptTokens).toBeUndefined();
      expect(whole.usage.completionTokens).toBeUndefined();
    },
  },
  {
    id: 'stream-no-usage',
    name: 'a whole stream that reports no usage: the answer, done, usage not reported',
    async run(c) {
      const whole = await c.call(chatRequest());
      c.sim.setFault(c.slug, { kind: 'no_usage', times: 1 });
      const streamed = await c.stream(chatRequest());
      expect(streamed.error).toBeUndefined();
      const choice = only(streamed.deltas);
      expect(choice.text).toBe(whole.choices[0]?.text);
      expect(choice.finish).toBe('stop');
      expect(streamed.parser.usage().promptTokens).toBeUndefined();
      expect(streamed.parser.usage().completionTokens).toBeUndefined();
      expect(streamed.parser.done()).toBe(true);
    },
  },
  {
    id: 'stream-error-event',
    name: "the format's mid-stream error event fails the stream with an UpstreamError by its type, not done",
    async run(c) {
      for (const [status, kind] of [
        [undefined, 'server_error'],
        [429, 'rate_limited'],
      ] as const) {
        c.sim.setFault(c.slug, {
          kind: 'stream_error',
          afterChunks: 2,
          times: 1,
          ...(status ? { status } : {}),
        });
        const streamed = await c.stream(chatRequest());
        expect({ status, kind: streamed.error?.kind }).toEqual({ status, kind });
        expect(streamed.deltas.filter((d) => d.type === 'text').length).toBeGreaterThan(0);
        expect(streamed.parser.done()).toBe(false);
      }
    },
  },
  {
    id: 'stream-cut',
    name: 'a stream cut by the upstream ends (or fails) without being done',
    async run(c) {
      c.sim.setFault(c.slug, { kind: 'cut', afterChunks: 2, times: 1 });
      const streamed = await c.stream(chatRequest());
      if (streamed.error !== undefined) expect(streamed.error).toBeInstanceOf(UpstreamError);
      expect(streamed.parser.done()).toBe(false);
      expect(streamed.deltas.some((d) => d.type === 'finish')).toBe(false);
      expect(c.sim.streams(c.slug).at(-1)?.outcome).toBe('cut');
    },
  },
];

let sim: Simulator;
let client: UpstreamClient;

beforeAll(async () => {
  sim = await startSimulator();
  client = createUpstreamClient({ connectTimeoutMs: CLIENT_TIMEOUT_MS });
});

afterAll(async () => {
  await client?.close();
  await sim?.close();
});

function contract(row: FormatRow): Contract {
  const slug = `contract-${row.format}`;
  let provider: ProviderConfig | undefined;
  const c: Contract = {
    row,
    slug,
    adapter: adapterFor(row.format),
    // Made on first use: the simulator (and so its port) exists only once the tests run.
    get provider() {
      provider ??= providerConfig(row.provider, row.format, sim.baseUrl(row.format, slug), row.model);
      return provider;
    },
    get sim() {
      return sim;
    },
    async call(request) {
      const { adapter, provider } = c;
      expect(adapter.refusal(provider, request)).toBeUndefined();
      const response = await client.send(adapter.buildRequest(provider, request), {
        timeoutMs: CLIENT_TIMEOUT_MS,
      });
      return adapter.parseResponse(provider, response, request);
    },
    async stream(request) {
      const { adapter, provider } = c;
      expect(adapter.refusal(provider, request)).toBeUndefined();
      const result = await client.openStream(adapter.buildRequest(provider, request, { stream: true }), {
        firstByteTimeoutMs: CLIENT_TIMEOUT_MS,
        idleTimeoutMs: CLIENT_TIMEOUT_MS,
        deadlineMs: CLIENT_TIMEOUT_MS,
      });
      if (result.kind === 'response') {
        adapter.parseResponse(provider, result.response, request);
        throw new Error(`expected an event stream, got HTTP ${result.response.status}`);
      }
      const parser = adapter.streamParser(provider, request);
      const deltas: StreamDelta[] = [];
      let error: UpstreamError | undefined;
      try {
        for await (const event of result.events) deltas.push(...parser.event(event.data, event.name));
      } catch (thrown) {
        if (!(thrown instanceof UpstreamError)) throw thrown;
        error = thrown;
      } finally {
        result.close();
      }
      return { deltas, parser, error };
    },
    async failure(request, stream) {
      try {
        await (stream ? c.stream(request) : c.call(request));
      } catch (error) {
        if (error instanceof UpstreamError) return error;
        throw error;
      }
      throw new Error('expected the call to fail with an UpstreamError');
    },
  };
  return c;
}

describe.each(FORMATS)('adapter contract: $format', (row) => {
  const c = contract(row);
  afterEach(() => {
    sim.setFault(c.slug, null);
  });
  for (const testCase of CASES) {
    const bug = row.knownBugs?.[testCase.id];
    if (bug === undefined) it(`${testCase.id}: ${testCase.name}`, () => testCase.run(c));
    else it.fails(`${testCase.id}: ${testCase.name} (known bug: ${bug})`, () => testCase.run(c));
  }
});
