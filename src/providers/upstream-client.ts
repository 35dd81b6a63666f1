import { EventEmitter } from 'node:events';
import { Agent } from 'undici';
import {
  UpstreamError,
  type UpstreamFailureKind,
  type UpstreamHttpRequest,
  type UpstreamHttpResponse,
} from './types.js';

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
  /** Closes the pooled connections. */
  close(): Promise<void>;
}

const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
const DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024;
const KEEP_ALIVE_TIMEOUT_MS = 30_000;

/** Error codes (ours, Node's and undici's) that mean the connection could not be made or was lost. */
const CONNECT_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'EPIPE',
  'ETIMEDOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_CLOSED',
  'UND_ERR_DESTROYED',
  'UND_ERR_RES_CONTENT_LENGTH_MISMATCH',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
]);

const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/**
 * The one module that talks to upstreams: a pooled keep-alive undici `Agent`, one deadline for the whole
 * call (a timer, combined with the caller's signal if any), the body read fully as UTF-8 text up to a
 * size cap, and every failure turned into an `UpstreamError`. Messages name only the upstream host
 * and an error code: never a header, so never a key.
 *
 * @see https://undici.nodejs.org/#/docs/api/Dispatcher?id=dispatcherrequestoptions-callback
 * @see https://undici.nodejs.org/#/docs/api/Agent
 */
export function createUpstreamClient(options: CreateUpstreamClientOptions = {}): UpstreamClient {
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const defaultConnectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  // undici sets the connect timeout per Agent: one pooled Agent per distinct value (a handful at most).
  const agents = new Map<number, Agent>();
  const agentFor = (connectTimeoutMs: number): Agent => {
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

  async function send(req: UpstreamHttpRequest, opts: SendOptions): Promise<UpstreamHttpResponse> {
    const target = targetOf(req.url);
    const host = target.host;
    // One deadline for the whole call: a timer cleared at the end, and an emitter undici listens on (it
    // takes an EventEmitter as well as an AbortSignal; per call, an AbortController and its EventTarget
    // cost measurably more, and AbortSignal.timeout's timer lives until garbage collection).
    const deadline = new Deadline();
    const timer = setTimeout(() => deadline.fire(), Math.max(1, opts.timeoutMs));
    const signal = opts.signal === undefined ? deadline : AbortSignal.any([deadline.asSignal(), opts.signal]);
    try {
      if (target.invalid) throw new UpstreamError('connect', `upstream URL is invalid`);
      if (signal.aborted) throw new Error('aborted before the call');
      const response = await agentFor(opts.connectTimeoutMs ?? defaultConnectTimeoutMs).request({
        origin: target.origin,
        path: target.path,
        method: 'POST',
        headers: req.headers,
        body: req.body,
        signal,
        headersTimeout: opts.timeoutMs,
        bodyTimeout: opts.timeoutMs,
      });
      const declared = Number(singleHeader(response.headers['content-length']));
      if (Number.isFinite(declared) && declared > maxBodyBytes) {
        // Nothing is reading the body yet: without a listener, destroying it would emit an unhandled error.
        response.body.on('error', () => {});
        response.body.destroy();
        throw tooLarge(host, maxBodyBytes, response.statusCode);
      }
      // A declared length within the cap is read in one go (undici checks it against what arrives);
      // otherwise the body is counted chunk by chunk and cut off past the cap.
      const bodyText = Number.isFinite(declared)
        ? await response.body.text()
        : await readCapped(response.body, maxBodyBytes, () =>
            tooLarge(host, maxBodyBytes, response.statusCode),
          );
      return {
        status: response.statusCode,
        headers: normalizeHeaders(response.headers),
        bodyText,
      };
    } catch (error) {
      if (error instanceof UpstreamError) throw error;
      throw toUpstreamError(error, host, opts, deadline);
    } finally {
      clearTimeout(timer);
    }
  }

  return {
    send,
    close: async () => {
      await Promise.all([...agents.values()].map((agent) => agent.close()));
    },
  };
}

function toUpstreamError(error: unknown, host: string, opts: SendOptions, deadline: Deadline): UpstreamError {
  // Our own deadline first: whatever undici reports when it fires (abort, socket closed), it is a timeout.
  if (deadline.aborted) {
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

/** The first known error code along the `cause` chain (and inside an `AggregateError`). */
function findErrorCode(error: unknown, depth = 0): string | undefined {
  if (depth > 5 || typeof error !== 'object' || error === null) return undefined;
  const code: unknown = Reflect.get(error, 'code');
  if (typeof code === 'string' && (CONNECT_CODES.has(code) || TIMEOUT_CODES.has(code))) return code;
  if (error instanceof AggregateError) {
    for (const inner of error.errors as unknown[]) {
      const found = findErrorCode(inner, depth + 1);
      if (found !== undefined) return found;
    }
  }
  const fromCause = findErrorCode(Reflect.get(error, 'cause'), depth + 1);
  if (fromCause !== undefined) return fromCause;
  return typeof code === 'string' ? code : undefined;
}

/** Reads a body of unknown length as UTF-8, failing with `tooLarge()` once it passes `maxBytes`. */
async function readCapped(
  body: AsyncIterable<unknown>,
  maxBytes: number,
  tooLarge: () => Error,
): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
    size += buffer.length;
    // Leaving the loop by throwing destroys the body (and its connection) through the iterator.
    if (size > maxBytes) throw tooLarge();
    chunks.push(buffer);
  }
  return Buffer.concat(chunks, size).toString('utf8');
}

function tooLarge(host: string, maxBodyBytes: number, status: number): UpstreamError {
  return new UpstreamError(
    'bad_response',
    `upstream ${host} answered a body larger than ${maxBodyBytes} bytes`,
    {
      status,
    },
  );
}

/** The deadline of one call: `aborted` and an 'abort' event, as undici expects of an emitter signal. */
class Deadline extends EventEmitter {
  aborted = false;
  reason: unknown = undefined;

  fire(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = new Error('upstream deadline passed');
    this.emit('abort');
  }

  /** The same deadline as an AbortSignal, to combine with a caller's signal. */
  asSignal(): AbortSignal {
    const controller = new AbortController();
    if (this.aborted) controller.abort(this.reason);
    else this.once('abort', () => controller.abort(this.reason));
    return controller.signal;
  }
}

interface Target {
  origin: string;
  path: string;
  host: string;
  invalid: boolean;
}

/** Parsed upstream URLs: a handful of distinct ones (one per provider), each parsed once. */
const targets = new Map<string, Target>();

function targetOf(url: string): Target {
  let target = targets.get(url);
  if (target) return target;
  try {
    const parsed = new URL(url);
    target = {
      origin: parsed.origin,
      path: `${parsed.pathname}${parsed.search}`,
      host: parsed.host,
      invalid: false,
    };
  } catch {
    target = { origin: '', path: '', host: '(invalid url)', invalid: true };
  }
  if (targets.size >= 1_000) targets.clear();
  targets.set(url, target);
  return target;
}

function singleHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function normalizeHeaders(
  headers: Record<string, string | string[] | undefined>,
): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    out[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}
