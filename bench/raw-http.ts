/**
 * A minimal HTTP/1.1 client for c1 and the open loops: keep-alive sockets, requests serialized once,
 * responses parsed just enough for their status and end. It shares the load CPU with the upstream, so it
 * must cost little (undici costs about three times as much per request).
 *
 * @see https://www.rfc-editor.org/rfc/rfc9112
 */
import { connect, type Socket } from 'node:net';

const CRLF2 = Buffer.from('\r\n\r\n');
const CRLF = Buffer.from('\r\n');

/** A request the load generator sends, as the harness describes it. */
export interface RequestSpec {
  url: string;
  method: 'POST';
  headers: Record<string, string>;
  body: string;
  /** When set, each request uses the next of these `Authorization` values in turn (requests over many keys). */
  authorizations?: string[];
}

export interface RawRequest {
  host: string;
  port: number;
  path: string;
  method: string;
  headers: Record<string, string>;
  body: Buffer;
}

/** Called once per request: the response status, or `undefined` when the request failed. */
export type Done = (status: number | undefined) => void;

interface Pending {
  head: Buffer;
  done: Done;
  /** Sent once on a reused socket that was closed under it: may be sent again once. */
  retried: boolean;
}

/** Serializes the request head (everything up to the body) for one `Authorization` value. */
export function requestHead(req: RawRequest, authorization?: string): Buffer {
  const headers: Record<string, string> = { ...req.headers };
  if (authorization !== undefined) headers.authorization = authorization;
  let head = `${req.method} ${req.path} HTTP/1.1\r\nhost: ${req.host}:${req.port}\r\n`;
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (lower === 'host' || lower === 'content-length' || lower === 'connection') continue;
    head += `${name}: ${value}\r\n`;
  }
  head += `content-length: ${req.body.length}\r\n\r\n`;
  return Buffer.from(head, 'latin1');
}

class Connection {
  private buffer: Buffer | undefined;
  private current: Pending | undefined;
  private received = 0;
  /** Whether a request completed on this socket before (a stale keep-alive socket may fail the next). */
  reused = false;
  closed = false;

  constructor(
    readonly socket: Socket,
    private readonly body: Buffer,
    private readonly onFree: (c: Connection) => void,
    private readonly onClosed: (c: Connection, inFlight: Pending | undefined, gotBytes: boolean) => void,
  ) {
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', () => socket.destroy());
    socket.on('close', () => {
      this.closed = true;
      const inFlight = this.current;
      this.current = undefined;
      this.onClosed(this, inFlight, this.received > 0);
    });
  }

  send(pending: Pending): void {
    this.current = pending;
    this.received = 0;
    this.buffer = undefined;
    this.socket.cork();
    this.socket.write(pending.head);
    if (this.body.length > 0) this.socket.write(this.body);
    this.socket.uncork();
  }

  private onData(chunk: Buffer): void {
    this.received += chunk.length;
    this.buffer = this.buffer ? Buffer.concat([this.buffer, chunk]) : chunk;
    const end = this.responseEnd(this.buffer);
    if (end === undefined) return;
    const status = Number(this.buffer.toString('latin1', 9, 12));
    const closeAfter = /\r\nconnection:\s*close/i.test(
      this.buffer.toString('latin1', 0, this.buffer.indexOf(CRLF2)),
    );
    const pending = this.current;
    this.current = undefined;
    this.buffer = end < this.buffer.length ? this.buffer.subarray(end) : undefined;
    this.reused = true;
    pending?.done(Number.isInteger(status) ? status : undefined);
    if (closeAfter) this.socket.destroy();
    else this.onFree(this);
  }

  /** Offset just past the end of the first complete response in `buf`, or undefined if incomplete. */
  private responseEnd(buf: Buffer): number | undefined {
    const headEnd = buf.indexOf(CRLF2);
    if (headEnd < 0) return undefined;
    const head = buf.toString('latin1', 0, headEnd).toLowerCase();
    const bodyStart = headEnd + 4;
    const length = /\r\ncontent-length:\s*(\d+)/.exec(head);
    if (length) {
      const end = bodyStart + Number(length[1]);
      return buf.length >= end ? end : undefined;
    }
    if (/\r\ntransfer-encoding:[^\r]*chunked/.test(head)) {
      let at = bodyStart;
      for (;;) {
        const lineEnd = buf.indexOf(CRLF, at);
        if (lineEnd < 0) return undefined;
        const size = Number.parseInt(buf.toString('latin1', at, lineEnd), 16);
        if (!Number.isFinite(size)) return buf.length;
        if (size === 0) {
          // No trailers expected: the last chunk is followed by an empty line.
          const trailerEnd = buf.indexOf(CRLF, lineEnd + 2);
          return trailerEnd < 0 ? undefined : trailerEnd + 2;
        }
        at = lineEnd + 2 + size + 2;
        if (buf.length < at) return undefined;
      }
    }
    // 1xx/204/304 have no body; anything else without a length ends with the connection (not expected).
    const status = Number(buf.toString('latin1', 9, 12));
    return status < 200 || status === 204 || status === 304 ? bodyStart : undefined;
  }
}

/** Keep-alive sockets to one origin, up to `maxConnections`; requests queue (FIFO) beyond that. */
export class RawClient {
  private readonly idle: Connection[] = [];
  private readonly all = new Set<Connection>();
  /** Sockets opened and not connected yet; `close` ends these too. */
  private readonly connecting = new Set<Socket>();
  private closed = false;
  private readonly queue: Pending[] = [];
  private queueHead = 0;

  constructor(
    private readonly req: RawRequest,
    private readonly maxConnections: number,
  ) {}

  get queued(): number {
    return this.queue.length - this.queueHead;
  }

  send(head: Buffer, done: Done): void {
    this.dispatch({ head, done, retried: false });
  }

  private dispatch(pending: Pending): void {
    const conn = this.idle.pop();
    if (conn) {
      conn.send(pending);
      return;
    }
    this.queue.push(pending);
    if (this.all.size + this.connecting.size < this.maxConnections && this.connecting.size < this.queued)
      this.open();
  }

  private open(): void {
    if (this.closed) return;
    const socket = connect({ host: this.req.host, port: this.req.port });
    this.connecting.add(socket);
    let conn: Connection | undefined;
    socket.once('connect', () => {
      this.connecting.delete(socket);
      if (this.closed) {
        socket.destroy();
        return;
      }
      if (conn) {
        this.all.add(conn);
        this.free(conn);
      }
    });
    conn = new Connection(
      socket,
      this.req.body,
      (c) => this.free(c),
      (c, inFlight, gotBytes) => {
        this.connecting.delete(socket);
        const wasOpen = this.all.delete(c);
        if (wasOpen) {
          const i = this.idle.indexOf(c);
          if (i >= 0) this.idle.splice(i, 1);
        } else {
          // Could not connect: fail one waiting request, so a dead target drains the queue instead of
          // hanging it.
          this.takeQueued()?.done(undefined);
        }
        if (inFlight) {
          // A keep-alive socket the server closed just as we reused it: send once more elsewhere.
          if (c.reused && !gotBytes && !inFlight.retried) this.dispatch({ ...inFlight, retried: true });
          else inFlight.done(undefined);
        }
        // Requests still waiting need a socket in place of this one.
        if (this.queued > this.connecting.size && this.all.size + this.connecting.size < this.maxConnections)
          this.open();
      },
    );
  }

  private takeQueued(): Pending | undefined {
    if (this.queueHead >= this.queue.length) return undefined;
    const next = this.queue[this.queueHead++];
    if (this.queueHead > 4096 && this.queueHead * 2 > this.queue.length) {
      this.queue.splice(0, this.queueHead);
      this.queueHead = 0;
    }
    return next;
  }

  private free(conn: Connection): void {
    if (conn.closed) return;
    const next = this.takeQueued();
    if (next) conn.send(next);
    else this.idle.push(conn);
  }

  /**
   * Ends every socket, those still connecting included: one that connected after `close` would otherwise
   * stay open, idle, for the rest of the process (an open-loop run ends with many such after a stall).
   */
  close(): void {
    this.closed = true;
    for (const socket of this.connecting) socket.destroy();
    this.connecting.clear();
    for (const conn of this.all) conn.socket.destroy();
    this.all.clear();
    this.idle.length = 0;
  }
}
