import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { UpstreamError, type UpstreamHttpRequest } from '../../src/providers/types.js';
import { createUpstreamClient, type UpstreamClient } from '../../src/providers/upstream-client.js';
import { TEST_KEY } from './provider-test-helpers.js';

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function startServer(handler: Handler): Promise<string> {
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => handler(req, res, Buffer.concat(chunks).toString('utf8')));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A port that was just free: nothing listens there. */
async function closedPort(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
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
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'héllo' }] }),
  };
}

async function failure(promise: Promise<unknown>): Promise<UpstreamError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(UpstreamError);
    const upstreamError = error as UpstreamError;
    expect(upstreamError.message).not.toContain(TEST_KEY);
    expect(upstreamError.message).not.toContain('authorization');
    return upstreamError;
  }
  throw new Error('expected the call to fail');
}

describe('upstream client', () => {
  it('POSTs the request and returns status, lower-cased headers and the full body text', async () => {
    let seen: { method?: string; url?: string; auth?: string; type?: string; body?: string } = {};
    const base = await startServer((req, res, body) => {
      seen = {
        method: req.method,
        url: req.url,
        auth: req.headers.authorization,
        type: req.headers['content-type'],
        body,
      };
      res.setHeader('X-Request-Id', 'req-1');
      res.setHeader('Set-Cookie', ['a=1', 'b=2']);
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ ok: 'ünïcode' }));
    });
    const response = await client().send(post(base), { timeoutMs: 5000 });
    expect(seen).toEqual({
      method: 'POST',
      url: '/v1/chat/completions',
      auth: `Bearer ${TEST_KEY}`,
      type: 'application/json',
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'héllo' }] }),
    });
    expect(response.status).toBe(200);
    expect(response.headers['x-request-id']).toBe('req-1');
    expect(response.headers['content-type']).toBe('application/json');
    expect(response.headers['set-cookie']).toBe('a=1, b=2');
    expect(response.bodyText).toBe('{"ok":"ünïcode"}');
  });

  it('returns non-2xx answers as they are (the adapter classifies them)', async () => {
    const base = await startServer((_req, res) => {
      res.writeHead(429, { 'retry-after': '3', 'content-type': 'application/json' });
      res.end('{"error":{"message":"slow down"}}');
    });
    const response = await client().send(post(base), { timeoutMs: 5000 });
    expect(response).toMatchObject({ status: 429, bodyText: '{"error":{"message":"slow down"}}' });
    expect(response.headers['retry-after']).toBe('3');
  });

  it('a server that never answers is a timeout within the deadline', async () => {
    const base = await startServer(() => {});
    const started = Date.now();
    const error = await failure(client().send(post(base), { timeoutMs: 300 }));
    expect(error.kind).toBe('timeout');
    expect(error.retryable).toBe(true);
    expect(Date.now() - started).toBeLessThan(300 + 500);
  });

  it('a body that trickles past the deadline is a timeout: the deadline covers the whole call', async () => {
    const base = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const timer = setInterval(() => res.write(' '), 50);
      res.on('close', () => clearInterval(timer));
    });
    const started = Date.now();
    const error = await failure(client().send(post(base), { timeoutMs: 400 }));
    expect(error.kind).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(400 + 500);
  });

  it('a refused connection is a connect failure', async () => {
    const base = await closedPort();
    const error = await failure(client().send(post(base), { timeoutMs: 5000 }));
    expect(error.kind).toBe('connect');
    expect(error.retryable).toBe(true);
    expect(error.message).toContain('127.0.0.1');
  });

  it('an unknown host is a connect failure', async () => {
    const error = await failure(client().send(post('http://tollgate-upstream.invalid'), { timeoutMs: 5000 }));
    expect(error.kind).toBe('connect');
  });

  it('a socket destroyed in the middle of the body is a connect failure', async () => {
    const base = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('{"choices":[');
      setTimeout(() => res.socket?.destroy(), 20);
    });
    const error = await failure(client().send(post(base), { timeoutMs: 5000 }));
    expect(error.kind).toBe('connect');
  });

  it('a body larger than the cap is a bad response, whether declared or streamed', async () => {
    const big = 'x'.repeat(2048);
    const declared = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(big.length) });
      res.end(big);
    });
    const small = client({ maxBodyBytes: 1024 });
    const first = await failure(small.send(post(declared), { timeoutMs: 5000 }));
    expect(first).toMatchObject({ kind: 'bad_response', status: 200 });
    const chunked = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      for (let i = 0; i < 4; i += 1) res.write(big.slice(0, 512));
      res.end(big);
    });
    const second = await failure(small.send(post(chunked), { timeoutMs: 5000 }));
    expect(second.kind).toBe('bad_response');
  });

  it('an external abort signal ends the call early', async () => {
    const base = await startServer(() => {});
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('gateway deadline')), 100);
    const started = Date.now();
    const error = await failure(client().send(post(base), { timeoutMs: 10_000, signal: controller.signal }));
    expect(error.kind).toBe('timeout');
    expect(error.message).toContain('aborted');
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('an already aborted signal fails without sending', async () => {
    let hits = 0;
    const base = await startServer((_req, res) => {
      hits += 1;
      res.end('{}');
    });
    const error = await failure(client().send(post(base), { timeoutMs: 5000, signal: AbortSignal.abort() }));
    expect(error.kind).toBe('timeout');
    expect(hits).toBe(0);
  });

  it('a call queued behind a busy connection still ends at its deadline, and is never sent', async () => {
    let hits = 0;
    const base = await startServer((_req, res) => {
      hits += 1;
      if (hits > 1) res.end('{}');
      // The first call is never answered: it holds the one connection.
    });
    const pooled = client({ connections: 1 });
    const first = failure(pooled.send(post(base), { timeoutMs: 1500 }));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const started = Date.now();
    const queued = await failure(pooled.send(post(base), { timeoutMs: 200 }));
    expect(queued.kind).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(200 + 300);
    expect((await first).kind).toBe('timeout');
    // Once the connection is free the queued call is dropped, not sent late.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(hits).toBe(1);
  });

  it('reads a body that arrives in many chunks whole, a character split between two of them included', async () => {
    const text = JSON.stringify({ content: 'héllo wörld ✓ 𝄞'.repeat(200) });
    const bytes = Buffer.from(text, 'utf8');
    const base = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'x-a': 'one' });
      // Odd-sized pieces cut multi-byte characters in two; each flushed on its own.
      let at = 0;
      const step = () => {
        if (at >= bytes.length) return res.end();
        res.write(bytes.subarray(at, at + 7));
        at += 7;
        setImmediate(step);
      };
      step();
    });
    const response = await client().send(post(base), { timeoutMs: 5000 });
    expect(response.bodyText).toBe(text);
    expect(response.headers['x-a']).toBe('one');
  });

  it('joins the values of a repeated response header', async () => {
    const base = await startServer((_req, res) => {
      res.setHeader('x-upstream-note', ['first', 'second']);
      res.end('{}');
    });
    const response = await client().send(post(base), { timeoutMs: 5000 });
    expect(response.headers['x-upstream-note']).toBe('first, second');
  });

  it('reuses kept-alive connections across calls', async () => {
    const ports = new Set<number>();
    const base = await startServer((req, res) => {
      ports.add(req.socket.remotePort ?? -1);
      res.end('{}');
    });
    const pooled = client({ connections: 1 });
    for (let i = 0; i < 3; i += 1) await pooled.send(post(base), { timeoutMs: 5000 });
    expect(ports.size).toBe(1);
  });
});
