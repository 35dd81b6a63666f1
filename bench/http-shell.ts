/**
 * What the web framework costs per call: the HTTP shell of a chat completion — a JSON body read and
 * parsed, a request id, the listeners Tollgate's hooks attach, a fixed JSON answer of the same size as
 * Tollgate's — with no gateway behind it, served either by Fastify with the hooks Tollgate registers on
 * that route (`--framework fastify`) or by `node:http` doing the same work by hand (`--framework node`).
 * `npm run bench:instructions -- --only fastify-shell,node-shell` counts the instructions of each; the
 * difference is what serving the hot route outside Fastify could save at most (docs/performance.md,
 * fourteenth round).
 *
 * `node dist/bench/http-shell.js --framework fastify|node` prints one JSON line `{"url": …}` once
 * listening; closes on SIGTERM/SIGINT.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';

const ROUTE = '/api/v1/chat/completions';
const framework = process.argv[process.argv.indexOf('--framework') + 1];
if (framework !== 'fastify' && framework !== 'node') {
  process.stderr.write('http-shell: --framework fastify|node is required\n');
  process.exit(2);
}

/** An answer shaped and sized like Tollgate's (choices, usage, meta with cost and balance). */
const ANSWER = JSON.stringify({
  id: 'chatcmpl-01jd6v4x0000000000000000',
  object: 'chat.completion',
  created: 1_764_000_000,
  model: 'deepseek-chat',
  choices: [
    {
      index: 0,
      message: { role: 'assistant', content: 'Sure. Here is a short answer to your question, kept brief.' },
      finish_reason: 'stop',
    },
  ],
  usage: { prompt_tokens: 9, completion_tokens: 14, total_tokens: 23 },
  meta: {
    provider: 'deepseek',
    cost: { input: 0.000002448, output: 0.000015288, total: 0.000017736 },
    balance: 999999.999982264,
    duration_ms: 1,
  },
});

/** The answer encoded as Tollgate's route encodes its bodies (one pass into a buffer). */
function answerBytes(): Buffer {
  const buffer = Buffer.allocUnsafe(ANSWER.length * 3);
  return buffer.subarray(0, buffer.write(ANSWER));
}

type Req = Record<string, unknown>;

let counter = 0;
const requestId = () => `req_${Date.now().toString(36)}${(counter++).toString(36)}`;

function fastifyShell() {
  const app = Fastify({
    logger: false,
    bodyLimit: 1 << 20,
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    return503OnClosing: false,
    requestIdHeader: false,
    genReqId: requestId,
  });
  app.removeContentTypeParser('text/plain');
  for (const name of ['auth', 'startedAt', 'provider', 'clientGone', 'errorCode'])
    app.decorateRequest(name, null);
  app.decorateRequest('finish', () => {});
  app.decorateRequest('enterHandler', () => {});
  // As src/http/app.ts and src/http/metrics-route.ts: the request id header, the closing check, the
  // metrics hooks.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });
  app.addHook('onSend', (_request, _reply, payload, done) => done(null, payload));
  app.addHook('onError', (request, _reply, _error, done) => {
    (request as unknown as Req).errorCode = 'x';
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    if (request.routeOptions.url === ROUTE && request.method === 'POST') {
      (request as unknown as Req).errorCode = reply.statusCode;
    }
    done();
  });
  app.register(
    async (api) => {
      // As src/api/routes.ts: the slots' bookkeeping and the two 'close' listeners of every request.
      api.addHook('onRequest', (request, reply, done) => {
        const r = request as unknown as Req;
        r.startedAt = Date.now();
        let inHandler = false;
        r.finish = () => {};
        request.raw.once('close', () => {
          if (!inHandler) (r.finish as () => void)();
        });
        const response = reply.raw;
        response.once('close', () => {
          if (!response.writableFinished) r.clientGone = true;
          if (!inHandler) (r.finish as () => void)();
        });
        r.enterHandler = () => {
          inHandler = true;
        };
        r.auth = { keyId: 'key', accountId: 'acct' };
        done();
      });
      api.post('/chat/completions', async (request, reply) => {
        const r = request as unknown as Req;
        (r.enterHandler as () => void)();
        try {
          if (typeof request.body !== 'object' || request.body === null) throw new Error('no body');
          return reply.code(200).type('application/json; charset=utf-8').send(answerBytes());
        } finally {
          (r.finish as () => void)();
        }
      });
    },
    { prefix: '/api/v1' },
  );
  return app;
}

/** The same work on `node:http`: route, content type, body limit, JSON with the prototype check, answer. */
function nodeShell() {
  const refuse = (res: ServerResponse, status: number) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end('{"error":{}}');
  };
  return createServer((req: IncomingMessage, res: ServerResponse) => {
    const id = requestId();
    if (req.method !== 'POST' || req.url !== ROUTE) return refuse(res, 404);
    const type = req.headers['content-type'];
    if (typeof type !== 'string' || !type.startsWith('application/json')) return refuse(res, 415);
    const chunks: Buffer[] = [];
    let size = 0;
    let clientGone = false;
    res.once('close', () => {
      if (!res.writableFinished) clientGone = true;
    });
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > 1 << 20) req.destroy();
      else chunks.push(chunk);
    });
    req.on('end', () => {
      const text = (chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)).toString('utf8');
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        return refuse(res, 400);
      }
      if (/"(?:__proto__|constructor)"/.test(text) || typeof body !== 'object') return refuse(res, 400);
      // The handler's await, as Tollgate's route awaits its gateway.
      Promise.resolve(clientGone).then(() => {
        const bytes = answerBytes();
        res.writeHead(200, {
          'x-request-id': id,
          'content-type': 'application/json; charset=utf-8',
          'content-length': bytes.length,
        });
        res.end(bytes);
      });
    });
  });
}

const print = (port: number) =>
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}` })}\n`);
if (framework === 'fastify') {
  const app = fastifyShell();
  await app.listen({ port: 0, host: '127.0.0.1' });
  print((app.server.address() as AddressInfo).port);
  const stop = () => app.close().finally(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
} else {
  const server = nodeShell();
  server.keepAliveTimeout = 72_000;
  server.listen(0, '127.0.0.1', () => print((server.address() as AddressInfo).port));
  const stop = () => {
    server.close();
    server.closeAllConnections();
    process.exit(0);
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}
