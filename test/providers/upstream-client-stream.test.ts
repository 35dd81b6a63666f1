import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { openaiCompatibleAdapter } from '../../src/providers/openai-compatible/index.js';
import type { SseEvent } from '../../src/providers/sse-decoder.js';
import { UpstreamError, type UpstreamHttpRequest } from '../../src/providers/types.js';
import {
  createUpstreamClient,
  type StreamOptions,
  type UpstreamClient,
  type UpstreamEventStream,
  type UpstreamStreamResult,
} from '../../src/providers/upstream-client.js';
import { chatRequest, providerConfig, TEST_KEY } from './provider-test-helpers.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A local server whose handler runs once the request body has been read. */
async function startServer(handler: Handler): Promise<string> {
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => handler(req, res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function client(options?: Parameters<typeof createUpstreamClient>[0]): UpstreamClient {
  const created = createUpstreamClient(options);
  cleanups.push(() => created.close());
  return created;
}

function post(baseUrl: string): UpstreamHttpRequest {
  return {
    url: `${baseUrl}/v1/chat/completions`,
    headers: { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
  };
}

const OPTIONS: StreamOptions = { firstByteTimeoutMs: 5_000, idleTimeoutMs: 5_000 };

function sseHead(res: ServerResponse, extra: Record<string, string> = {}): void {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    ...extra,
  });
  res.flushHeaders();
}

function event(data: string, name?: string): string {
  return `${name === undefined ? '' : `event: ${name}\n`}data: ${data}\n\n`;
}

function asStream(result: UpstreamStreamResult): UpstreamEventStream {
  if (result.kind !== 'stream') throw new Error(`expected a stream, got HTTP ${result.response.status}`);
  cleanups.push(() => result.close());
  return result;
}

async function openStream(base: string, opts: StreamOptions = OPTIONS, over = client()) {
  return asStream(await over.openStream(post(base), opts));
}

/** The failure of `promise`, which must reject with an `UpstreamError` naming no key or header. */
async function failure(promise: Promise<unknown>): Promise<UpstreamError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(UpstreamError);
    const upstreamError = error as UpstreamError;
    expect(upstreamError.message).not.toContain(TEST_KEY);
    expect(upstreamError.message.toLowerCase()).not.toContain('authorization');
    return upstreamError;
  }
  throw new Error('expected the call to fail');
}

/** Reads every event of `stream`. */
async function drain(stream: UpstreamEventStream): Promise<SseEvent[]> {
  const events: SseEvent[] = [];
  for await (const received of stream.events) events.push(received);
  return events;
}

/** Resolves once `res` is closed, with whether the server had ended the answer itself. */
function closed(res: ServerResponse): Promise<{ ended: boolean; at: number }> {
  return new Promise((resolve) =>
    res.on('close', () => resolve({ ended: res.writableEnded, at: Date.now() })),
  );
}

describe('upstream client: openStream', () => {
  it('POSTs the request and hands over events as they arrive, one before the next is even written', async () => {
    let seen: { method?: string; auth?: string } = {};
    let writeSecond: (() => void) | undefined;
    const base = await startServer((req, res) => {
      seen = { method: req.method, auth: req.headers.authorization };
      sseHead(res, { 'x-request-id': 'req-9' });
      res.write(event('{"n":1}'));
      writeSecond = () => {
        res.write(': keep-alive comment\n\n');
        res.write(event('{"type":"message_stop"}', 'message_stop'));
        res.end();
      };
    });
    const stream = await openStream(base);
    expect(seen).toEqual({ method: 'POST', auth: `Bearer ${TEST_KEY}` });
    expect(stream.status).toBe(200);
    expect(stream.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(stream.headers['x-request-id']).toBe('req-9');
    const iterator = stream.events[Symbol.asyncIterator]();
    expect(await iterator.next()).toEqual({ done: false, value: { name: undefined, data: '{"n":1}' } });
    expect(writeSecond).toBeDefined();
    writeSecond?.();
    expect(await iterator.next()).toEqual({
      done: false,
      value: { name: 'message_stop', data: '{"type":"message_stop"}' },
    });
    expect(await iterator.next()).toEqual({ done: true, value: undefined });
  });

  it('reads an event cut into pieces anywhere, a multi-byte character included', async () => {
    const text = event('{"text":"héllo wörld ✓ 𝄞"}').repeat(20);
    const bytes = Buffer.from(text, 'utf8');
    const base = await startServer((_req, res) => {
      sseHead(res);
      let at = 0;
      const step = () => {
        if (at >= bytes.length) return res.end();
        res.write(bytes.subarray(at, at + 7));
        at += 7;
        setImmediate(step);
      };
      step();
    });
    const events = await drain(await openStream(base));
    expect(events).toHaveLength(20);
    for (const received of events) expect(received.data).toBe('{"text":"héllo wörld ✓ 𝄞"}');
  });

  it('returns a non-2xx answer whole, for the adapter to classify', async () => {
    const base = await startServer((_req, res) => {
      res.writeHead(429, { 'retry-after': '3', 'content-type': 'application/json' });
      res.end('{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}');
    });
    const result = await client().openStream(post(base), OPTIONS);
    expect(result.kind).toBe('response');
    if (result.kind !== 'response') return;
    expect(result.response.status).toBe(429);
    expect(result.response.headers['retry-after']).toBe('3');
    expect(result.response.bodyText).toContain('slow down');
    const provider = providerConfig('prov-deepseek', 'openai-compatible', base, 'm');
    let thrown: unknown;
    try {
      openaiCompatibleAdapter.parseResponse(provider, result.response, chatRequest());
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toMatchObject({ kind: 'rate_limited', retryAfterMs: 3000 });
  });

  it('returns a 2xx answer that is not an event stream whole (a host that ignored stream: true)', async () => {
    const completion = {
      id: 'c1',
      model: 'm',
      choices: [{ index: 0, message: { role: 'assistant', content: 'whole' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 1, completion_tokens: 1 },
    };
    const base = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(completion));
    });
    const result = await client().openStream(post(base), OPTIONS);
    expect(result.kind).toBe('response');
    if (result.kind !== 'response') return;
    expect(JSON.parse(result.response.bodyText)).toEqual(completion);
  });

  it('fails a non-stream answer larger than the body cap', async () => {
    const base = await startServer((_req, res) => {
      res.writeHead(500, { 'content-type': 'text/html' });
      res.end('x'.repeat(4096));
    });
    const error = await failure(client({ maxBodyBytes: 1024 }).openStream(post(base), OPTIONS));
    expect(error).toMatchObject({ kind: 'bad_response', status: 500 });
  });

  it('first-byte timeout: no headers at all fails openStream', async () => {
    const base = await startServer(() => {});
    const started = Date.now();
    const error = await failure(client().openStream(post(base), { ...OPTIONS, firstByteTimeoutMs: 300 }));
    expect(error.kind).toBe('timeout');
    expect(error.message).toContain('127.0.0.1');
    expect(Date.now() - started).toBeLessThan(300 + 1_500);
  });

  it('first-byte timeout: headers and comments but no event fails the iterator', async () => {
    let response: Promise<{ ended: boolean; at: number }> | undefined;
    const base = await startServer((_req, res) => {
      response = closed(res);
      sseHead(res);
      const timer = setInterval(() => res.write(': still thinking\n\n'), 50);
      res.on('close', () => clearInterval(timer));
    });
    const started = Date.now();
    const stream = await openStream(base, { ...OPTIONS, firstByteTimeoutMs: 400 });
    const error = await failure(drain(stream));
    expect(error.kind).toBe('timeout');
    expect(error.message).toContain('no event');
    expect(Date.now() - started).toBeLessThan(400 + 1_500);
    expect((await response)?.ended).toBe(false);
  });

  it('idle timeout: a stream that stops sending events fails the iterator', async () => {
    const base = await startServer((_req, res) => {
      sseHead(res);
      res.write(event('{"n":1}'));
    });
    const stream = await openStream(base, { ...OPTIONS, idleTimeoutMs: 300 });
    const iterator = stream.events[Symbol.asyncIterator]();
    expect((await iterator.next()).value).toEqual({ name: undefined, data: '{"n":1}' });
    const started = Date.now();
    const error = await failure(iterator.next());
    expect(error.kind).toBe('timeout');
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(Date.now() - started).toBeLessThan(300 + 1_500);
  });

  it('idle timeout: time the consumer spends on an event does not count', async () => {
    const base = await startServer((_req, res) => {
      sseHead(res);
      for (let i = 0; i < 3; i += 1) res.write(event(`{"n":${i}}`));
      res.end();
    });
    const stream = await openStream(base, { ...OPTIONS, idleTimeoutMs: 150 });
    const events: SseEvent[] = [];
    for await (const received of stream.events) {
      events.push(received);
      await sleep(400);
    }
    expect(events).toHaveLength(3);
  });

  it('deadline: a stream that keeps going past the cap fails the iterator', async () => {
    const base = await startServer((_req, res) => {
      sseHead(res);
      const timer = setInterval(() => res.write(event('{"tick":true}')), 30);
      res.on('close', () => clearInterval(timer));
    });
    const started = Date.now();
    const stream = await openStream(base, { ...OPTIONS, deadlineMs: 500 });
    const error = await failure(drain(stream));
    expect(error.kind).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(500 + 1_500);
  });

  it('close() closes the upstream connection within a second, and the iterator just ends', async () => {
    let response: Promise<{ ended: boolean; at: number }> | undefined;
    const base = await startServer((_req, res) => {
      response = closed(res);
      sseHead(res);
      res.write(event('{"n":1}'));
      // Then nothing: the answer is still running when the gateway gives up.
    });
    const stream = await openStream(base);
    const iterator = stream.events[Symbol.asyncIterator]();
    expect((await iterator.next()).done).toBe(false);
    const pending = iterator.next();
    const closedAt = Date.now();
    stream.close();
    expect(await pending).toEqual({ done: true, value: undefined });
    const seen = await response;
    expect(seen?.ended).toBe(false);
    expect((seen?.at ?? Number.POSITIVE_INFINITY) - closedAt).toBeLessThan(1_000);
    expect(await iterator.next()).toEqual({ done: true, value: undefined });
  });

  it('close() before iterating, and leaving the loop early, close the upstream connection', async () => {
    const responses: Promise<{ ended: boolean; at: number }>[] = [];
    const base = await startServer((_req, res) => {
      responses.push(closed(res));
      sseHead(res);
      const timer = setInterval(() => res.write(event('{"tick":true}')), 20);
      res.on('close', () => clearInterval(timer));
    });
    const first = await openStream(base);
    const closedAt = Date.now();
    first.close();
    expect(await drain(first)).toEqual([]);
    expect(((await responses[0])?.at ?? Number.POSITIVE_INFINITY) - closedAt).toBeLessThan(1_000);

    const second = await openStream(base);
    let count = 0;
    for await (const _ of second.events) {
      count += 1;
      if (count === 2) break;
    }
    const leftAt = Date.now();
    const seen = await responses[1];
    expect(seen?.ended).toBe(false);
    expect((seen?.at ?? Number.POSITIVE_INFINITY) - leftAt).toBeLessThan(1_000);
  });

  it('the caller signal aborts the stream: a timeout from the iterator, the connection closed', async () => {
    let response: Promise<{ ended: boolean; at: number }> | undefined;
    const base = await startServer((_req, res) => {
      response = closed(res);
      sseHead(res);
      res.write(event('{"n":1}'));
    });
    const controller = new AbortController();
    const stream = await openStream(base, { ...OPTIONS, signal: controller.signal });
    const iterator = stream.events[Symbol.asyncIterator]();
    await iterator.next();
    setTimeout(() => controller.abort(new Error('client went away')), 50);
    const error = await failure(iterator.next());
    expect(error.kind).toBe('timeout');
    expect(error.message).toContain('aborted');
    expect((await response)?.ended).toBe(false);
  });

  it('an already aborted signal fails without sending', async () => {
    let hits = 0;
    const base = await startServer((_req, res) => {
      hits += 1;
      res.end();
    });
    const error = await failure(client().openStream(post(base), { ...OPTIONS, signal: AbortSignal.abort() }));
    expect(error.kind).toBe('timeout');
    expect(hits).toBe(0);
  });

  it('a socket lost mid-stream is a connect failure, after the events that came before it', async () => {
    const base = await startServer((_req, res) => {
      sseHead(res);
      res.write(event('{"n":1}'));
      res.write(event('{"n":2}'));
      setTimeout(() => res.socket?.destroy(), 50);
    });
    const stream = await openStream(base);
    const events: SseEvent[] = [];
    const error = await failure(
      (async () => {
        for await (const received of stream.events) events.push(received);
      })(),
    );
    expect(events.map((received) => received.data)).toEqual(['{"n":1}', '{"n":2}']);
    expect(error.kind).toBe('connect');
  });

  it('a refused connection fails openStream as a connect failure', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const error = await failure(client().openStream(post(`http://127.0.0.1:${port}`), OPTIONS));
    expect(error.kind).toBe('connect');
  });

  it('an event past maxEventBytes is a bad response, and closes the connection', async () => {
    let response: Promise<{ ended: boolean; at: number }> | undefined;
    const base = await startServer((_req, res) => {
      response = closed(res);
      sseHead(res);
      res.write(event('{"small":true}'));
      res.write(`data: ${'x'.repeat(64 * 1024)}`);
    });
    const stream = await openStream(base, { ...OPTIONS, maxEventBytes: 16 * 1024 });
    const events: SseEvent[] = [];
    const error = await failure(
      (async () => {
        for await (const received of stream.events) events.push(received);
      })(),
    );
    expect(events).toHaveLength(1);
    expect(error.kind).toBe('bad_response');
    expect(error.message).toContain('16384');
    expect((await response)?.ended).toBe(false);
  });

  it('reuses the kept-alive connection after a stream read to its end', async () => {
    const ports = new Set<number>();
    const base = await startServer((req, res) => {
      ports.add(req.socket.remotePort ?? -1);
      sseHead(res);
      res.end(event('[DONE]'));
    });
    const pooled = client({ connections: 1 });
    for (let i = 0; i < 3; i += 1) {
      expect(await drain(await openStream(base, OPTIONS, pooled))).toEqual([
        { name: undefined, data: '[DONE]' },
      ]);
    }
    expect(ports.size).toBe(1);
  });

  it('a slow consumer holds the upstream back: what the server can write stays bounded', async () => {
    const EVENT = event(`{"pad":"${'x'.repeat(16 * 1024)}"}`);
    const TOTAL = 128 * 1024 * 1024;
    let written = 0;
    const base = await startServer((_req, res) => {
      sseHead(res);
      const pump = (): void => {
        while (written < TOTAL) {
          written += EVENT.length;
          if (!res.write(EVENT)) {
            res.once('drain', pump);
            return;
          }
        }
        res.end();
      };
      pump();
      res.on('close', () => res.removeAllListeners('drain'));
    });
    const stream = await openStream(base);
    const iterator = stream.events[Symbol.asyncIterator]();
    for (let i = 0; i < 5; i += 1) expect((await iterator.next()).done).toBe(false);
    // The consumer stops reading: the server's writes stall once the socket buffers are full.
    let before = -1;
    for (let waited = 0; waited < 5_000 && written !== before; waited += 250) {
      before = written;
      await sleep(250);
    }
    expect(written).toBe(before);
    expect(written).toBeLessThan(48 * 1024 * 1024);
    // Reading again resumes the upstream: many times the client's own buffer comes through.
    for (let i = 0; i < 300; i += 1) {
      const next = await iterator.next();
      expect(next.done).toBe(false);
      expect(next.value?.data.length).toBe(EVENT.length - 8);
    }
    stream.close();
  });
});
