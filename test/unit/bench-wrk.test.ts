import { createServer, type IncomingMessage, type Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { luaString, parseWrkOutput, WrkRun } from '../../bench/wrk.js';
import { findProgram, havePrograms, WRK } from '../helpers/system-programs.js';

const wrk = havePrograms("the benchmark's closed loop on wrk", WRK) ? findProgram(WRK) : undefined;

let server: Server | undefined;
afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

interface Seen {
  method: string | undefined;
  url: string | undefined;
  authorization: string | undefined;
  contentType: string | undefined;
  body: string;
}

/** A keep-alive server that records every request and answers 500 to the key `Bearer bad`. */
async function recordingServer(): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const authorization = req.headers.authorization;
      seen.push({
        method: req.method,
        url: req.url,
        authorization,
        contentType: req.headers['content-type'],
        body: Buffer.concat(chunks).toString('utf8'),
      });
      res.writeHead(authorization === 'Bearer bad' ? 500 : 200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    });
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', () => resolve()));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return { url: `http://127.0.0.1:${address.port}/api/v1/chat/completions`, seen };
}

describe("the benchmark's wrk client (bench/wrk.ts)", () => {
  it('writes any text as a Lua string literal, byte by byte', () => {
    expect(luaString('plain text')).toBe('"plain text"');
    expect(luaString('a"b\\c\n')).toBe('"a\\034b\\092c\\010"');
    // UTF-8 bytes, each as a decimal escape.
    expect(luaString('é')).toBe('"\\195\\169"');
  });

  it('reads the figures line and converts latency to milliseconds', () => {
    const figures = parseWrkOutput(
      'Running 1s test\nTOLLGATE_WRK {"durationUs":1000000,"requests":10,"status":2,"connect":0,"read":1,"write":0,"timeout":3,"mean":250.5,"p50":200,"p90":400,"p99":900,"p999":990,"max":1000}\n',
    );
    expect(figures).toMatchObject({ durationUs: 1_000_000, requests: 10, status: 2, read: 1, timeout: 3 });
    expect(figures.latency).toEqual({ mean: 0.2505, p50: 0.2, p90: 0.4, p99: 0.9, p999: 0.99, max: 1 });
    expect(() => parseWrkOutput('unable to connect to 127.0.0.1:1 Connection refused\n')).toThrow(
      /printed no figures[\s\S]*Connection refused/,
    );
  });

  it.skipIf(!wrk)('sends the request as given, keys in turn, and counts error statuses', async () => {
    const { url, seen } = await recordingServer();
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'héllo "quoted"\n' }] });
    const run = new WrkRun(wrk as string, {
      url,
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer first' },
      body,
      authorizations: ['Bearer k1', 'Bearer k2', 'Bearer bad'],
    });
    try {
      const figures = await run.run(2, 1);
      expect(seen.length).toBeGreaterThan(30);
      expect(figures.requests).toBeGreaterThan(0);
      // Every completed answer was a request the server saw; wrk may leave up to one per connection unread.
      expect(seen.length - figures.requests).toBeGreaterThanOrEqual(0);
      expect(seen.length - figures.requests).toBeLessThanOrEqual(2);
      for (const request of seen) {
        expect(request).toMatchObject({ method: 'POST', url: '/api/v1/chat/completions' });
        expect(request.contentType).toBe('application/json');
        expect(request.body).toBe(body);
      }
      // The list's keys, in turn, and never the header it replaces.
      const keys = new Map<string, number>();
      for (const request of seen)
        keys.set(String(request.authorization), (keys.get(String(request.authorization)) ?? 0) + 1);
      expect([...keys.keys()].sort()).toEqual(['Bearer bad', 'Bearer k1', 'Bearer k2']);
      for (const count of keys.values()) expect(Math.abs(count - seen.length / 3)).toBeLessThanOrEqual(2);
      // A third of the answers were 500s: wrk counts them as status errors.
      expect(Math.abs(figures.status - figures.requests / 3)).toBeLessThanOrEqual(2);
      expect(figures.connect + figures.read + figures.write + figures.timeout).toBe(0);
      expect(figures.latency.p50).toBeGreaterThan(0);
      expect(figures.latency.p99).toBeGreaterThanOrEqual(figures.latency.p50);
    } finally {
      run.dispose();
    }
  });

  it.skipIf(!wrk)('with one key, sends the request headers unchanged', async () => {
    const { url, seen } = await recordingServer();
    const run = new WrkRun(wrk as string, {
      url,
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer only' },
      body: '{}',
    });
    try {
      const figures = await run.run(1, 1);
      expect(figures.status).toBe(0);
      expect(new Set(seen.map((s) => s.authorization))).toEqual(new Set(['Bearer only']));
    } finally {
      run.dispose();
    }
  });
});
