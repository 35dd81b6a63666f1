import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * What a scripted upstream answers to every request until told otherwise: a JSON body, or server-sent
 * events written as fast as the reader takes them, then either the end of the body or silence until the
 * reader closes the connection (`end: false`).
 */
export type Script = { kind: 'json'; body: unknown } | { kind: 'sse'; events: string[]; end: boolean };

/** How the last streamed answer went. */
export interface ScriptedStream {
  /** Events handed to the socket. */
  written: number;
  /** Whether the reader closed the connection before the answer's end. */
  closed: boolean;
}

export interface ScriptedUpstream {
  /** e.g. `http://127.0.0.1:41234`: every path answers the same way. */
  url: string;
  answer(script: Script): void;
  /** The parsed bodies of the requests received, oldest first. */
  bodies: unknown[];
  /** The headers of the requests received, oldest first. */
  headers: import('node:http').IncomingHttpHeaders[];
  /** The last streamed answer since the last `reset()`, once one began. */
  last(): ScriptedStream | undefined;
  /** Forgets the last stream and the bodies received. */
  reset(): void;
  close(): Promise<void>;
}

/** One server-sent event: its `event:` line when named, and its data as JSON (or as given when a string). */
export function sseEvent(data: unknown, name?: string): string {
  const text = typeof data === 'string' ? data : JSON.stringify(data);
  return `${name === undefined ? '' : `event: ${name}\n`}data: ${text}\n\n`;
}

function drainedOrClosed(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/**
 * A tiny upstream on loopback that answers with a fixed script, for the shapes the simulator does not
 * write (thousands of reasoning pieces, thinking signatures, redacted thinking, answers without usage).
 */
export async function startScriptedUpstream(): Promise<ScriptedUpstream> {
  let script: Script = { kind: 'json', body: {} };
  const bodies: unknown[] = [];
  const headers: import('node:http').IncomingHttpHeaders[] = [];
  let last: ScriptedStream | undefined;
  const sockets = new Set<import('node:net').Socket>();

  async function stream(res: ServerResponse, events: readonly string[], end: boolean): Promise<void> {
    const record: ScriptedStream = { written: 0, closed: false };
    last = record;
    res.on('close', () => {
      if (!res.writableFinished) record.closed = true;
    });
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    for (const event of events) {
      if (record.closed) return;
      const ok = res.write(event);
      record.written += 1;
      if (!ok) await drainedOrClosed(res);
    }
    if (end && !record.closed) res.end();
  }

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    headers.push(req.headers);
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      try {
        bodies.push(JSON.parse(text));
      } catch {
        bodies.push(text);
      }
      const now = script;
      if (now.kind === 'json') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(now.body));
      } else {
        void stream(res, now.events, now.end);
      }
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    bodies,
    headers,
    answer(next) {
      script = next;
    },
    last: () => (last === undefined ? undefined : { ...last }),
    reset() {
      last = undefined;
      bodies.length = 0;
      headers.length = 0;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      server.close();
      await once(server, 'close');
    },
  };
}
