/**
 * The floor any Node gateway pays: `node:http` forwarding each request through one undici Pool, bodies
 * buffered both ways, no parsing, auth or accounting. `--stream`: the answer's chunks are written as they
 * arrive. `node dist/bench/bare-proxy.js --upstream URL [--connections 64] [--stream]` prints `{"url": …}`.
 *
 * @see https://undici.nodejs.org/#/docs/api/Pool
 * @see https://undici.nodejs.org/#/docs/api/Dispatcher?id=dispatcherstreamoptions-factory-callback
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';

function option(name: string, fallback?: string): string {
  const i = process.argv.indexOf(name);
  const value = i >= 0 ? process.argv[i + 1] : fallback;
  if (value === undefined) {
    process.stderr.write(`bare-proxy: ${name} is required\n`);
    process.exit(2);
  }
  return value;
}

const upstream = new URL(option('--upstream'));
const streaming = process.argv.includes('--stream');
const pool = new Pool(upstream.origin, {
  connections: Number(option('--connections', '64')),
  pipelining: 1,
  keepAliveTimeout: 60_000,
});

/** Hop-by-hop headers (RFC 9110 §7.6.1) and those the client library sets itself. */
const DROP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'host', 'content-length', 'upgrade']);

function forwardable(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || DROP.has(name)) continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

/** A 502 with the error, or — once a streamed answer has begun — the connection cut, as the client's sign. */
function failed(res: ServerResponse, err: unknown): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const message = err instanceof Error ? err.message : String(err);
  res.writeHead(502, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: { message: `bare-proxy: ${message}` } }));
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
    const options = {
      method: (req.method ?? 'GET') as 'POST',
      path: req.url ?? '/',
      headers: forwardable(req.headers),
      body: body.length > 0 ? body : null,
    };
    if (streaming) {
      // undici writes each body chunk into the response it is given and ends it; write()'s backpressure
      // pauses the upstream connection, so a slow client holds the upstream back instead of filling memory.
      pool
        .stream(options, ({ statusCode, headers }) => {
          const type = headers['content-type'];
          res.writeHead(statusCode, typeof type === 'string' ? { 'content-type': type } : {});
          return res;
        })
        .catch((err: unknown) => failed(res, err));
      return;
    }
    pool
      .request(options)
      .then(async (answer) => {
        const payload = Buffer.from(await answer.body.arrayBuffer());
        const headers: Record<string, string> = { 'content-length': String(payload.length) };
        const type = answer.headers['content-type'];
        if (typeof type === 'string') headers['content-type'] = type;
        res.writeHead(answer.statusCode, headers);
        res.end(payload);
      })
      .catch((err: unknown) => failed(res, err));
  });
});
server.keepAliveTimeout = 60_000;

server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}` })}\n`);
});

const stop = () => {
  server.close();
  server.closeAllConnections();
  pool.close().finally(() => process.exit(0));
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
