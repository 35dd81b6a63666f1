import type OpenAI from 'openai';
import { composeReply, promptTokens } from '../../src/simulator/reply.js';
import { type Harness, type HarnessOptions, startHarness } from '../helpers/harness.js';

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * Replaces `globalThis.fetch` (what the openai SDK, LangChain — tiktoken downloads included — and the AI
 * SDK use by default) with one that serves loopback only and records every other URL instead of calling
 * it, so a test proves its client library never tried the network. Install before creating clients.
 */
export function guardNetwork(): { refused: string[]; restore(): void } {
  const original = globalThis.fetch;
  const refused: string[] = [];
  globalThis.fetch = (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (!LOOPBACK.has(url.hostname)) {
      refused.push(url.href);
      return Promise.reject(new TypeError(`network access outside loopback refused in tests: ${url.href}`));
    }
    return original(input, init);
  };
  return {
    refused,
    restore() {
      globalThis.fetch = original;
    },
  };
}

/** A Tollgate listening on 127.0.0.1 (real sockets) with the upstream simulator; `baseURL` ends in /api/v1. */
export async function startListening(options: HarnessOptions = {}): Promise<{ h: Harness; baseURL: string }> {
  const h = await startHarness(options);
  const url = await h.server.listen();
  if (new URL(url).hostname !== '127.0.0.1') throw new Error(`expected a loopback listener, got ${url}`);
  return { h, baseURL: `${url}/api/v1` };
}

/**
 * The usage the simulator reports for a one-message prompt answered by the provider `slug` (it counts
 * with the o200k tokenizer: prompt text + 4 per message + 3; the reply's own tokens). The reply is far
 * shorter than any cap the gateway sends.
 */
export function simulatedUsage(slug: string, userText: string): { prompt: number; completion: number } {
  return {
    prompt: promptTokens([userText]),
    completion: composeReply(slug, userText, Number.MAX_SAFE_INTEGER, []).completionTokens,
  };
}

/** One server-sent event of a streamed answer: its `data:` text (`[DONE]`, or JSON). */
export interface SseEvent {
  data: string;
}

/** The events of a server-sent-event body (blank-line separated; `data:` lines joined; comments skipped). */
export function parseSse(text: string): SseEvent[] {
  const events: SseEvent[] = [];
  for (const block of text.replace(/\r\n/g, '\n').split('\n\n')) {
    const data = block
      .split('\n')
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).replace(/^ /, ''));
    if (data.length > 0) events.push({ data: data.join('\n') });
  }
  return events;
}

/** A `chat.completion.chunk` as Tollgate streams it (the last one carries `usage` and `meta`). */
export interface StreamChunk {
  id: string;
  object: string;
  model: string;
  choices: Array<{
    index: number;
    delta: {
      role?: string;
      content?: string;
      tool_calls?: Array<{ index: number; id?: string; function: { name?: string; arguments: string } }>;
    };
    logprobs?: { content: Array<{ token: string; logprob: number }> } | null;
    finish_reason: string | null;
  }>;
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number; cost: number } | null;
  meta?: { provider: string; cost: { input: number; output: number; total: number }; balance: number };
  error?: { message: string; type: string; code: string };
}

/** A streamed answer read to its end over a real socket: status, headers, raw text and its events. */
export interface StreamedAnswer {
  status: number;
  headers: Headers;
  text: string;
  /** Every event's data, in order (`[DONE]` included as the string). */
  events: string[];
  /** The JSON events (everything but `[DONE]`). */
  chunks: StreamChunk[];
  /** The content deltas of choice 0, concatenated. */
  content: string;
  /** The chunk with `meta` (the bill), if any. */
  bill: StreamChunk | undefined;
  /** Nanodollars of the bill's `meta.cost.total` (0 without a bill). */
  billedNano: number;
}

/** Splits a streamed answer's body into its events and the pieces the tests look at. */
export function readStreamed(status: number, headers: Headers, text: string): StreamedAnswer {
  const events = parseSse(text).map((e) => e.data);
  const chunks = events.filter((d) => d !== '[DONE]').map((d) => JSON.parse(d) as StreamChunk);
  const content = chunks.map((c) => c.choices?.find((ch) => ch.index === 0)?.delta.content ?? '').join('');
  const bill = chunks.find((c) => c.meta !== undefined);
  const billedNano = bill?.meta ? Math.round(bill.meta.cost.total * 1e9) : 0;
  return { status, headers, text, events, chunks, content, bill, billedNano };
}

/** POSTs a chat completion to a listening Tollgate (`baseURL` from `startListening`) and reads it whole. */
export async function postChat(
  baseURL: string,
  key: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<StreamedAnswer> {
  const res = await fetch(`${baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return readStreamed(res.status, res.headers, await res.text());
}

/** Two function tools the simulator calls when a user message names them. */
export const weatherTool: OpenAI.Chat.Completions.ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather of a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' } },
      required: ['city'],
      additionalProperties: false,
    },
  },
};
export const timeTool: OpenAI.Chat.Completions.ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'get_time',
    description: 'Local time in a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' } },
      required: ['city'],
      additionalProperties: false,
    },
  },
};
