import type { Simulator, WireFormat } from '../../src/simulator/index.js';
import { AUTH, type Json } from './sim-helpers.js';

/** One server-sent event: its `event:` name (if any) and its `data:` lines joined. */
export interface SseEvent {
  event: string | null;
  data: string;
}

/** A tiny SSE reader for the tests: blank-line separated events, LF or CRLF line ends. */
export function parseSse(text: string): SseEvent[] {
  const events: SseEvent[] = [];
  for (const block of text.replace(/\r\n/g, '\n').split('\n\n')) {
    if (block.trim() === '') continue;
    let event: string | null = null;
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith('event:')) event = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
    }
    events.push({ event, data: data.join('\n') });
  }
  return events;
}

/** The JSON of each event's data (`[DONE]` left out). */
export function jsonEvents(text: string): Json[] {
  return parseSse(text)
    .filter((e) => e.data !== '[DONE]')
    .map((e) => JSON.parse(e.data) as Json);
}

/** The streaming URL of the format for `slug` (Gemini: `:streamGenerateContent`, SSE unless `sse` false). */
export function streamUrl(sim: Simulator, format: WireFormat, slug: string, sse = true): string {
  const base = sim.baseUrl(format, slug);
  if (format === 'openai-compatible') return `${base}/chat/completions`;
  if (format === 'anthropic') return `${base}/v1/messages`;
  return `${base}/v1beta/models/gemini-2.5-flash:streamGenerateContent${sse ? '?alt=sse' : ''}`;
}

/** The request body with the format's way of asking for a stream (Gemini asks by its URL). */
export function streamBody(format: WireFormat, body: Json): Json {
  return format === 'gemini' ? body : { ...body, stream: true };
}

export interface StreamResult {
  status: number;
  contentType: string | null;
  /** The whole body as received. */
  text: string;
  /** Set when the body broke off (the connection dropped before the end). */
  error: unknown;
}

/** POSTs and reads the whole (streamed) body; a connection that drops is reported, not thrown. */
export async function postStream(
  sim: Simulator,
  format: WireFormat,
  slug: string,
  body: Json,
  options: { url?: string; headers?: Record<string, string> } = {},
): Promise<StreamResult> {
  const res = await fetch(options.url ?? streamUrl(sim, format, slug), {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(options.headers ?? AUTH[format]) },
    body: JSON.stringify(streamBody(format, body)),
  });
  const decoder = new TextDecoder();
  let text = '';
  let error: unknown = null;
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      text += decoder.decode(chunk, { stream: true });
    }
  } catch (err) {
    error = err;
  }
  return { status: res.status, contentType: res.headers.get('content-type'), text, error };
}

/** Minimal valid bodies (one user message) per format. */
export function bodyFor(format: WireFormat, text = 'Hello there', extra: Json = {}): Json {
  if (format === 'openai-compatible') {
    return { model: 'oa-model', messages: [{ role: 'user', content: text }], ...extra };
  }
  if (format === 'anthropic') {
    return { model: 'claude-test', max_tokens: 1024, messages: [{ role: 'user', content: text }], ...extra };
  }
  return { contents: [{ role: 'user', parts: [{ text }] }], ...extra };
}

/** Polls until `check` returns a value (not undefined), or fails after `ms`. */
export async function eventually<T>(check: () => T | undefined, ms = 3000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export const FORMATS: WireFormat[] = ['openai-compatible', 'anthropic', 'gemini'];

/** What a stream assembles to, whatever the format. */
export interface Assembled {
  text: string;
  calls: Array<{ name: string; args: unknown }>;
  finish: string | null;
  prompt: number | null;
  completion: number | null;
}

export function assemble(format: WireFormat, text: string): Assembled {
  const out: Assembled = { text: '', calls: [], finish: null, prompt: null, completion: null };
  const events = jsonEvents(format === 'gemini' && text.startsWith('[') ? '' : text);
  if (format === 'openai-compatible') {
    const args: Array<{ name: string; json: string }> = [];
    for (const e of events) {
      const usage = e.usage as { prompt_tokens: number; completion_tokens: number } | null | undefined;
      if (usage) {
        out.prompt = usage.prompt_tokens;
        out.completion = usage.completion_tokens;
      }
      for (const c of (e.choices ?? []) as Json[]) {
        if (c.index !== 0) continue;
        const delta = c.delta as { content?: string | null; tool_calls?: Json[] };
        if (typeof delta.content === 'string') out.text += delta.content;
        for (const call of delta.tool_calls ?? []) {
          const fn = call.function as { name?: string; arguments?: string };
          const i = call.index as number;
          args[i] ??= { name: '', json: '' };
          if (fn.name) (args[i] as { name: string }).name = fn.name;
          (args[i] as { json: string }).json += fn.arguments ?? '';
        }
        if (c.finish_reason) out.finish = c.finish_reason as string;
      }
    }
    out.calls = args.map((a) => ({ name: a.name, args: JSON.parse(a.json) as unknown }));
  } else if (format === 'anthropic') {
    const blocks: Array<{ type: string; name?: string; json: string }> = [];
    for (const e of events) {
      if (e.type === 'message_start') {
        const usage = (e.message as Json).usage as { input_tokens: number } | undefined;
        if (usage) out.prompt = usage.input_tokens;
      } else if (e.type === 'content_block_start') {
        const block = e.content_block as { type: string; name?: string };
        blocks[e.index as number] = {
          type: block.type,
          ...(block.name ? { name: block.name } : {}),
          json: '',
        };
      } else if (e.type === 'content_block_delta') {
        const delta = e.delta as { type: string; text?: string; partial_json?: string };
        if (delta.type === 'text_delta') out.text += delta.text;
        if (delta.type === 'input_json_delta')
          (blocks[e.index as number] as { json: string }).json += delta.partial_json;
      } else if (e.type === 'message_delta') {
        out.finish = (e.delta as { stop_reason: string }).stop_reason;
        const usage = e.usage as { output_tokens: number } | undefined;
        if (usage) out.completion = usage.output_tokens;
      }
    }
    out.calls = blocks
      .filter((b) => b.type === 'tool_use')
      .map((b) => ({ name: b.name as string, args: JSON.parse(b.json) as unknown }));
  } else {
    const chunks = text.startsWith('[') ? (JSON.parse(text) as Json[]) : events;
    for (const e of chunks) {
      const usage = e.usageMetadata as
        | { promptTokenCount: number; candidatesTokenCount?: number; thoughtsTokenCount?: number }
        | undefined;
      if (usage) {
        out.prompt = usage.promptTokenCount;
        if (usage.candidatesTokenCount !== undefined) {
          out.completion = usage.candidatesTokenCount + (usage.thoughtsTokenCount ?? 0);
        }
      }
      for (const c of (e.candidates ?? []) as Json[]) {
        if ((c.index ?? 0) !== 0) continue;
        const parts = ((c.content as Json).parts ?? []) as Json[];
        for (const part of parts) {
          if (typeof part.text === 'string' && part.thought !== true) out.text += part.text;
          const call = part.functionCall as { name: string; args: unknown } | undefined;
          if (call) out.calls.push({ name: call.name, args: call.args });
        }
        if (c.finishReason) out.finish = c.finishReason as string;
      }
    }
  }
  return out;
}

/** The same summary of a non-stream answer. */
export function summarise(format: WireFormat, body: Json): Assembled {
  if (format === 'openai-compatible') {
    const choice = (body.choices as Json[])[0] as Json;
    const message = choice.message as { content: string | null; tool_calls?: Json[] };
    const usage = body.usage as { prompt_tokens: number; completion_tokens: number };
    return {
      text: message.content ?? '',
      calls: (message.tool_calls ?? []).map((c) => {
        const fn = c.function as { name: string; arguments: string };
        return { name: fn.name, args: JSON.parse(fn.arguments) as unknown };
      }),
      finish: choice.finish_reason as string,
      prompt: usage.prompt_tokens,
      completion: usage.completion_tokens,
    };
  }
  if (format === 'anthropic') {
    const blocks = body.content as Json[];
    const usage = body.usage as { input_tokens: number; output_tokens: number };
    return {
      text: blocks
        .filter((b) => b.type === 'text')
        .map((b) => b.text)
        .join(''),
      calls: blocks
        .filter((b) => b.type === 'tool_use')
        .map((b) => ({ name: b.name as string, args: b.input })),
      finish: body.stop_reason as string,
      prompt: usage.input_tokens,
      completion: usage.output_tokens,
    };
  }
  const candidate = (body.candidates as Json[])[0] as Json;
  const parts = ((candidate.content as Json).parts ?? []) as Json[];
  const usage = body.usageMetadata as {
    promptTokenCount: number;
    candidatesTokenCount: number;
    thoughtsTokenCount?: number;
  };
  return {
    text: parts
      .filter((p) => typeof p.text === 'string' && p.thought !== true)
      .map((p) => p.text)
      .join(''),
    calls: parts
      .filter((p) => p.functionCall)
      .map((p) => {
        const call = p.functionCall as { name: string; args: unknown };
        return { name: call.name, args: call.args };
      }),
    finish: candidate.finishReason as string,
    prompt: usage.promptTokenCount,
    completion: usage.candidatesTokenCount + (usage.thoughtsTokenCount ?? 0),
  };
}

/** A stream being read in the background, for tests that act while it is open. */
export interface LiveStream {
  status: number;
  /** What has arrived so far. */
  text(): string;
  /** Resolves once `check` holds for what has arrived (fails after `ms`). */
  waitFor(check: (text: string) => boolean, ms?: number): Promise<void>;
  /** Closes the connection from the client's side; returns when (epoch ms). */
  abort(): number;
  /** Settles when the body ends: null, or the error it broke off with. */
  ended: Promise<unknown>;
}

export async function openStream(
  sim: Simulator,
  format: WireFormat,
  slug: string,
  body: Json,
  url = streamUrl(sim, format, slug),
): Promise<LiveStream> {
  const controller = new AbortController();
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...AUTH[format] },
    body: JSON.stringify(streamBody(format, body)),
    signal: controller.signal,
  });
  let text = '';
  const decoder = new TextDecoder();
  const ended = (async () => {
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        text += decoder.decode(chunk, { stream: true });
      }
      return null;
    } catch (err) {
      return err;
    }
  })();
  return {
    status: res.status,
    text: () => text,
    waitFor: (check, ms = 3000) =>
      eventually(() => (check(text) ? true : undefined), ms).then(() => undefined),
    abort: () => {
      const at = Date.now();
      controller.abort();
      return at;
    },
    ended,
  };
}

/** How many content events have arrived, whatever the format (see the parity tests). */
export function countContent(format: WireFormat, text: string): number {
  const complete = text.replace(/\r\n/g, '\n');
  const events = parseSse(complete.slice(0, complete.lastIndexOf('\n\n') + 2));
  if (format === 'anthropic') return events.filter((e) => e.event === 'content_block_delta').length;
  return events.filter((e) => {
    if (e.data === '[DONE]') return false;
    const data = JSON.parse(e.data) as Json;
    if (format === 'gemini') return data.candidates !== undefined;
    const delta = ((data.choices as Json[] | undefined)?.[0]?.delta ?? {}) as Json;
    return (typeof delta.content === 'string' && delta.content !== '') || delta.tool_calls !== undefined;
  }).length;
}
