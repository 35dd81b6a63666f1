import type { Dispatcher } from 'undici';
// The Agent module alone, not undici's index: the index also loads fetch, WebSocket, EventSource, the
// cache and the mock agents, none of which a gateway uses, and that code stays on the heap for the life
// of the process, a sizeable part of what a server holds after start.
// The path is not part of undici's documented API: test/providers/upstream-client.test.ts would fail on an
// upgrade that moved it.
import Agent from 'undici/lib/dispatcher/agent.js';
import {
  UpstreamError,
  type UpstreamFailureKind,
  type UpstreamHttpRequest,
  type UpstreamHttpResponse,
} from './types.js';
import { findErrorCode, TIMEOUT_CODES, tooLarge } from './upstream-call-errors.js';
import { headerValue, NO_HEADERS, type RawHeaders, ReceivedResponse } from './upstream-headers.js';
import {
  DEFAULT_MAX_EVENT_BYTES,
  type StreamOptions,
  UpstreamStreamCall,
  type UpstreamStreamResult,
} from './upstream-stream-call.js';
import { targetOf } from './upstream-target.js';

export type { StreamOptions, UpstreamEventStream, UpstreamStreamResult } from './upstream-stream-call.js';

export interface CreateUpstreamClientOptions {
  /** Time allowed to open the TCP/TLS connection; default 10 s (the call's own deadline still applies). */
  connectTimeoutMs?: number;
  /** Largest response body read; a larger one is a `bad_response`. Default 16 MiB. */
  maxBodyBytes?: number;
  /** Connections kept per upstream origin; default unlimited (undici's default). */
  connections?: number;
}

export interface SendOptions {
  /** Deadline for the whole call: connect, request, response headers and the full body. */
  timeoutMs: number;
  /** Aborts the call early (e.g. the gateway's overall deadline). */
  signal?: AbortSignal;
  /** Time allowed to open the connection; the client's default when absent. */
  connectTimeoutMs?: number;
}

export interface UpstreamClient {
  /** Sends one JSON POST and reads the whole answer, whatever its status; throws only `UpstreamError`. */
  send(req: UpstreamHttpRequest, opts: SendOptions): Promise<UpstreamHttpResponse>;
  /**
   * Sends one JSON POST for a streamed answer, on the same pooled connections. Resolves once the response
   * headers came: to the event stream for a 2xx `text/event-stream` answer, otherwise to the whole answer
   * (read up to the body cap) for the adapter to classify. Rejects only with `UpstreamError` (`timeout`
   * for the first-byte timer, the deadline or the signal; `connect`; `bad_response` for a body past the
   * cap); later failures come from the stream's iterator.
   */
  openStream(req: UpstreamHttpRequest, opts: StreamOptions): Promise<UpstreamStreamResult>;
  /** Closes the pooled connections. */
  close(): Promise<void>;
}

const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
const DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024;
const KEEP_ALIVE_TIMEOUT_MS = 30_000;

/**
 * The one module that talks to upstreams: a pooled keep-alive undici `Agent`, one deadline for the whole
 * call (a timer, combined with the caller's signal if any), the body read fully as UTF-8 text up to a
 * size cap, and every failure turned into an `UpstreamError`. Messages name only the upstream host
 * and an error code: never a header, so never a key. A streamed call (`openStream`) goes over the same
 * agents, with its own timers and its events read as they are consumed (`UpstreamStreamCall`).
 *
 * @see https://undici.nodejs.org/#/docs/api/Dispatcher?id=dispatcherrequestoptions-callback
 * @see https://undici.nodejs.org/#/docs/api/Agent
 */
export function createUpstreamClient(options: CreateUpstreamClientOptions = {}): UpstreamClient {
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const defaultConnectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  // undici sets the connect timeout per Agent: one pooled Agent per distinct value (a handful at most).
  const agents = new Map<number, InstanceType<typeof Agent>>();
  const agentFor = (connectTimeoutMs: number): InstanceType<typeof Agent> => {
    let agent = agents.get(connectTimeoutMs);
    if (!agent) {
      agent = new Agent({
        connect: { timeout: connectTimeoutMs },
        keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
        ...(options.connections === undefined ? {} : { connections: options.connections }),
      });
      agents.set(connectTimeoutMs, agent);
    }
    return agent;
  };

  function send(req: UpstreamHttpRequest, opts: SendOptions): Promise<UpstreamHttpResponse> {
    const target = targetOf(req.url);
    if (target.invalid) return Promise.reject(new UpstreamError('connect', 'upstream URL is invalid'));
    if (opts.signal?.aborted === true) {
      return Promise.reject(toUpstreamError(new Error('aborted before the call'), target.host, opts, false));
    }
    return new Promise<UpstreamHttpResponse>((resolve, reject) => {
      const call = new UpstreamCall(target.host, maxBodyBytes, opts, resolve, reject);
      agentFor(opts.connectTimeoutMs ?? defaultConnectTimeoutMs).dispatch(
        {
          origin: target.origin,
          path: target.path,
          method: 'POST',
          headers: req.headers,
          body: req.body,
          // The call's own deadline (UpstreamCall's timer) covers the headers and the body. undici's two
          // timeouts would add a timer of its own per call: one that stays in undici's timer list until its
          // next tick, up to half a second after the call, long enough to be promoted to the old generation,
          // where it would bring the next mark-compact closer.
          headersTimeout: 0,
          bodyTimeout: 0,
        },
        call,
      );
    });
  }

  function openStream(req: UpstreamHttpRequest, opts: StreamOptions): Promise<UpstreamStreamResult> {
    const target = targetOf(req.url);
    if (target.invalid) return Promise.reject(new UpstreamError('connect', 'upstream URL is invalid'));
    if (opts.signal?.aborted === true) {
      return Promise.reject(new UpstreamError('timeout', `upstream call to ${target.host} was aborted`));
    }
    const maxEventBytes = opts.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
    return new Promise<UpstreamStreamResult>((resolve, reject) => {
      const call = new UpstreamStreamCall(target.host, maxBodyBytes, maxEventBytes, opts, resolve, reject);
      agentFor(opts.connectTimeoutMs ?? defaultConnectTimeoutMs).dispatch(
        {
          origin: target.origin,
          path: target.path,
          method: 'POST',
          headers: req.headers,
          body: req.body,
          // The call's own timers (first byte, idle, deadline) cover the headers and the body.
          headersTimeout: 0,
          bodyTimeout: 0,
        },
        call,
      );
    });
  }

  return {
    send,
    openStream,
    close: async () => {
      await Promise.all([...agents.values()].map((agent) => agent.close()));
    },
  };
}

function toUpstreamError(
  error: unknown,
  host: string,
  opts: SendOptions,
  deadlinePassed: boolean,
): UpstreamError {
  // Our own deadline first: whatever undici reports when it fires (abort, socket closed), it is a timeout.
  if (deadlinePassed) {
    return new UpstreamError('timeout', `upstream ${host} did not answer within ${opts.timeoutMs} ms`, {
      cause: error,
    });
  }
  if (opts.signal?.aborted === true) {
    return new UpstreamError('timeout', `upstream call to ${host} was aborted`, { cause: error });
  }
  const code = findErrorCode(error);
  const kind: UpstreamFailureKind = code !== undefined && TIMEOUT_CODES.has(code) ? 'timeout' : 'connect';
  const what = kind === 'timeout' ? 'timed out' : 'connection failed';
  return new UpstreamError(kind, `upstream ${host} ${what}${code === undefined ? '' : ` (${code})`}`, {
    cause: error,
  });
}

/**
 * One upstream call as undici's dispatch handler: undici calls these methods as the answer arrives, and
 * the body's chunks are kept as they come — no stream object, no async iteration, nothing per chunk but a
 * length check. The call ends once, by `resolve` or `reject`: the first of the full answer, an error from
 * undici, the deadline, the caller's abort, or a body past the cap. Ending early aborts the request
 * (at once if it is on a socket, else as soon as undici hands it one).
 *
 * It implements the handler methods undici's connection code calls itself (`onConnect`, `onHeaders`,
 * `onData`, `onComplete`, `onError`; undici's own `request()` is written against them, and its types mark
 * them deprecated). A handler with the newer `onRequestStart`/`onResponseStart` methods is wrapped per call
 * in an adapter that also turns every response header (and the trailers) into an object of strings; the
 * answer's headers are only read when a call failed (`Retry-After`), so here they stay as undici read
 * them until then. test/providers/upstream-client.test.ts
 * covers every method, so an undici that stopped calling them fails there.
 *
 * @see https://undici.nodejs.org/#/docs/api/Dispatcher?id=dispatcherdispatchoptions-handler
 */
class UpstreamCall implements Dispatcher.DispatchHandler {
  private readonly timer: NodeJS.Timeout;
  private abortRequest: ((reason?: Error) => void) | undefined;
  private ended = false;
  private failure: Error | undefined;
  private deadlinePassed = false;
  private status = 0;
  private rawHeaders: RawHeaders = NO_HEADERS;
  private chunks: Buffer[] = [];
  private size = 0;

  constructor(
    private readonly host: string,
    private readonly maxBodyBytes: number,
    private readonly opts: SendOptions,
    private readonly resolve: (response: UpstreamHttpResponse) => void,
    private readonly reject: (error: UpstreamError) => void,
  ) {
    // One deadline for the whole call (connect, headers, body): a timer cleared when the call ends. A
    // caller's signal has the call itself as its listener (`handleEvent`).
    this.timer = setTimeout(passDeadline, Math.max(1, opts.timeoutMs), this);
    opts.signal?.addEventListener('abort', this, { once: true });
  }

  onDeadline(): void {
    this.deadlinePassed = true;
    this.fail(new Error('upstream deadline passed'));
  }

  /** The caller's signal aborted. */
  handleEvent(): void {
    this.fail(new Error('upstream call aborted by the caller'));
  }

  onConnect(abort: (reason?: Error) => void): void {
    // Also called again when undici retries the request on a new socket: the latest abort counts.
    this.abortRequest = abort;
    if (this.failure !== undefined) abort(this.failure);
  }

  onHeaders(statusCode: number, rawHeaders: RawHeaders): boolean {
    if (this.ended) return true;
    this.status = statusCode;
    this.rawHeaders = rawHeaders;
    this.chunks.length = 0;
    this.size = 0;
    // A declared length past the cap fails before a byte of the body is read (undici itself checks that
    // what arrives matches a declared length).
    const declared = Number(headerValue(rawHeaders, 'content-length'));
    if (Number.isFinite(declared) && declared > this.maxBodyBytes) this.fail(this.tooLarge());
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.ended) return true;
    this.size += chunk.length;
    if (this.size > this.maxBodyBytes) {
      this.fail(this.tooLarge());
      return true;
    }
    this.chunks.push(chunk);
    return true;
  }

  onComplete(): void {
    if (this.ended) return;
    const { chunks } = this;
    const bodyText =
      chunks.length === 1
        ? (chunks[0] as Buffer).toString('utf8')
        : Buffer.concat(chunks, this.size).toString('utf8');
    this.end();
    this.resolve(new ReceivedResponse(this.status, this.rawHeaders, bodyText));
  }

  onError(error: Error): void {
    if (this.ended) return;
    this.end();
    this.reject(
      error instanceof UpstreamError
        ? error
        : toUpstreamError(error, this.host, this.opts, this.deadlinePassed),
    );
  }

  /** Ends the call with `error` and aborts the request (later, if undici has not started it yet). */
  private fail(error: Error): void {
    if (this.ended) return;
    this.failure = error;
    this.onError(error);
    this.abortRequest?.(error);
  }

  private end(): void {
    this.ended = true;
    clearTimeout(this.timer);
    this.opts.signal?.removeEventListener('abort', this);
    this.chunks = [];
  }

  private tooLarge(): UpstreamError {
    return tooLarge(this.host, this.maxBodyBytes, this.status);
  }
}

function passDeadline(call: UpstreamCall): void {
  call.onDeadline();
}
