import type { Dispatcher } from 'undici';
import { SseDecoder, type SseEvent, SseEventTooLargeError } from './sse-decoder.js';
import { UpstreamError, type UpstreamHttpResponse } from './types.js';
import { findErrorCode, TIMEOUT_CODES, tooLarge } from './upstream-call-errors.js';
import {
  headerValue,
  NO_HEADERS,
  normalizeHeaders,
  type RawHeaders,
  ReceivedResponse,
} from './upstream-headers.js';

/** The limits of one streamed call (`UpstreamClient.openStream`). */
export interface StreamOptions {
  /** Time allowed from the call's start to its first event: connect, request, response headers, first event. */
  firstByteTimeoutMs: number;
  /**
   * Longest wait for the next event once one came. Only time spent waiting on the upstream counts: the
   * time the consumer holds an event does not.
   */
  idleTimeoutMs: number;
  /** Cap on the whole call, from its start to the stream's end; none when absent. */
  deadlineMs?: number;
  /** Aborts the call (before or during the stream); the iterator then throws a `timeout`. */
  signal?: AbortSignal;
  /** Time allowed to open the connection; the client's default when absent. */
  connectTimeoutMs?: number;
  /** Largest event (or line still being read) the stream may carry; default 8 MiB. */
  maxEventBytes?: number;
}

/** An upstream that answered with server-sent events. */
export interface UpstreamEventStream {
  kind: 'stream';
  status: number;
  /** Names in lower case, a repeated header's values joined with ", ". */
  headers: Record<string, string | undefined>;
  /**
   * The events, read from the upstream only as fast as they are iterated (iterate once). Ends when the
   * upstream ends its body; throws `UpstreamError` (`timeout`, `connect`, `bad_response`). Leaving the
   * loop early closes the stream.
   */
  events: AsyncIterable<SseEvent>;
  /** Aborts the upstream request at once (its connection is closed); the iterator then just ends. */
  close(): void;
}

/**
 * What `openStream` got: the event stream, or (a non-2xx status, or a 2xx that is not
 * `text/event-stream`, such as a JSON error) the whole answer for the adapter's `parseResponse`.
 */
export type UpstreamStreamResult = { kind: 'response'; response: UpstreamHttpResponse } | UpstreamEventStream;

/** `StreamOptions.maxEventBytes` when not given. */
export const DEFAULT_MAX_EVENT_BYTES = 8 * 1024 * 1024;

/** Bytes of the body held for the consumer before the upstream is paused. */
const HIGH_WATER_BYTES = 64 * 1024;

const EVENT_STREAM = /^\s*text\/event-stream\s*(;|$)/i;

/** Why the call stopped on our side (not the upstream's): it is surfaced at once, queued data unread. */
type Stop = UpstreamError | 'closed';

/**
 * One streamed upstream call as undici's dispatch handler (the same handler methods as `send`'s call, see
 * `UpstreamCall`). Until the response headers, it is a promise for `UpstreamStreamResult`; a 2xx
 * `text/event-stream` answer then becomes an event stream, anything else is read whole (up to
 * `maxBodyBytes`) and handed back as a response.
 *
 * Backpressure: body chunks are queued as undici hands them over, and once `HIGH_WATER_BYTES` wait
 * unread `onData` returns false, which pauses the connection until the consumer has taken them all
 * (`resume`); so memory stays within that, the decoder's `maxEventBytes` and the socket's buffers.
 *
 * Timers: the first-byte timer runs from the start to the first event, the deadline (if any) from the
 * start to the end; the idle timer counts only while the consumer waits for an event, and is re-armed
 * lazily (one timer per idle period, not one per event). A timer, the caller's signal or `close()` abort
 * the request, which closes its connection.
 *
 * @see https://undici.nodejs.org/#/docs/api/Dispatcher?id=dispatcherdispatchoptions-handler
 * @see https://html.spec.whatwg.org/multipage/server-sent-events.html#parsing-an-event-stream
 */
export class UpstreamStreamCall implements Dispatcher.DispatchHandler {
  private readonly firstByteTimer: NodeJS.Timeout;
  private readonly deadlineTimer: NodeJS.Timeout | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  /** When the consumer began waiting for the next event; -1 while it holds one (or before the first). */
  private waitingSince = -1;
  private firstEventCame = false;
  private abortRequest: ((reason?: Error) => void) | undefined;
  private resumeRequest: (() => void) | undefined;
  private settled = false;
  private ended = false;
  private mode: 'headers' | 'buffered' | 'stream' = 'headers';
  private status = 0;
  private rawHeaders: RawHeaders = NO_HEADERS;
  /** The body of an answer read whole. */
  private chunks: Buffer[] = [];
  private size = 0;
  /** Stream chunks not yet taken by the consumer. */
  private queue: Buffer[] = [];
  private queuedBytes = 0;
  private paused = false;
  private complete = false;
  /** An error undici reported mid-stream: surfaced once the data received before it is read. */
  private upstreamFailure: UpstreamError | undefined;
  private stop: Stop | undefined;
  private wake: (() => void) | undefined;

  constructor(
    private readonly host: string,
    private readonly maxBodyBytes: number,
    private readonly maxEventBytes: number,
    private readonly opts: StreamOptions,
    private readonly resolve: (result: UpstreamStreamResult) => void,
    private readonly reject: (error: UpstreamError) => void,
  ) {
    this.firstByteTimer = setTimeout(onFirstByteTimeout, Math.max(1, opts.firstByteTimeoutMs), this);
    this.deadlineTimer =
      opts.deadlineMs === undefined ? undefined : setTimeout(onDeadline, Math.max(1, opts.deadlineMs), this);
    opts.signal?.addEventListener('abort', this, { once: true });
  }

  /** The caller's signal aborted. */
  handleEvent(): void {
    this.halt(new UpstreamError('timeout', `upstream call to ${this.host} was aborted`));
  }

  firstByteTimeout(): void {
    this.halt(
      new UpstreamError(
        'timeout',
        `upstream ${this.host} sent no event within ${this.opts.firstByteTimeoutMs} ms`,
      ),
    );
  }

  deadline(): void {
    this.halt(
      new UpstreamError('timeout', `upstream ${this.host} did not finish within ${this.opts.deadlineMs} ms`),
    );
  }

  idleCheck(): void {
    this.idleTimer = undefined;
    if (this.ended || this.waitingSince < 0) return;
    const waited = Date.now() - this.waitingSince;
    const limit = this.opts.idleTimeoutMs;
    if (waited >= limit) {
      this.halt(new UpstreamError('timeout', `upstream ${this.host} sent no event for ${limit} ms`));
    } else {
      this.idleTimer = setTimeout(onIdleCheck, Math.max(1, limit - waited), this);
    }
  }

  onConnect(abort: (reason?: Error) => void): void {
    // Also called again when undici retries the request on a new socket: the latest abort counts.
    this.abortRequest = abort;
    if (this.stop !== undefined) abort(stopError(this.stop));
  }

  onHeaders(statusCode: number, rawHeaders: RawHeaders, resume: () => void): boolean {
    if (this.ended || this.mode !== 'headers' || statusCode < 200) return true;
    this.status = statusCode;
    this.rawHeaders = rawHeaders;
    this.resumeRequest = resume;
    const type = headerValue(rawHeaders, 'content-type');
    if (statusCode <= 299 && type !== undefined && EVENT_STREAM.test(type)) {
      this.mode = 'stream';
      this.settled = true;
      const events = this.read();
      this.resolve({
        kind: 'stream',
        status: statusCode,
        headers: normalizeHeaders(rawHeaders),
        events,
        close: () => this.close(),
      });
      return true;
    }
    this.mode = 'buffered';
    const declared = Number(headerValue(rawHeaders, 'content-length'));
    if (Number.isFinite(declared) && declared > this.maxBodyBytes) {
      this.halt(tooLarge(this.host, this.maxBodyBytes, statusCode));
    }
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.ended || this.stop !== undefined) return true;
    if (this.mode === 'buffered') {
      this.size += chunk.length;
      if (this.size > this.maxBodyBytes) this.halt(tooLarge(this.host, this.maxBodyBytes, this.status));
      else this.chunks.push(chunk);
      return true;
    }
    this.queue.push(chunk);
    this.queuedBytes += chunk.length;
    this.wakeConsumer();
    if (this.queuedBytes < HIGH_WATER_BYTES) return true;
    this.paused = true;
    return false;
  }

  onComplete(): void {
    if (this.ended || this.stop !== undefined) return;
    if (this.mode === 'buffered') {
      const { chunks } = this;
      const bodyText =
        chunks.length === 1
          ? (chunks[0] as Buffer).toString('utf8')
          : Buffer.concat(chunks, this.size).toString('utf8');
      this.settled = true;
      this.finish();
      this.resolve({
        kind: 'response',
        response: new ReceivedResponse(this.status, this.rawHeaders, bodyText),
      });
      return;
    }
    this.complete = true;
    this.wakeConsumer();
  }

  onError(error: Error): void {
    if (this.ended || this.stop !== undefined) return;
    const failure = this.toUpstreamError(error);
    if (!this.settled) {
      this.settled = true;
      this.finish();
      this.reject(failure);
      return;
    }
    this.upstreamFailure = failure;
    this.wakeConsumer();
  }

  /** The consumer is done with the stream: abort the request, if it still runs, and end the iterator. */
  close(): void {
    this.halt('closed');
  }

  /** The events, decoded as the consumer asks for them. */
  private async *read(): AsyncGenerator<SseEvent, void, undefined> {
    const decoder = new SseDecoder({ maxEventBytes: this.maxEventBytes });
    let events: SseEvent[] = [];
    let next = 0;
    try {
      for (;;) {
        if (this.stop !== undefined) {
          if (this.stop === 'closed') return;
          throw this.stop;
        }
        this.beginWait();
        const event = events[next];
        if (event !== undefined) {
          next += 1;
          this.eventCame();
          yield event;
          continue;
        }
        const chunk = this.take();
        if (chunk !== undefined) {
          events = this.decode(decoder, chunk);
          next = 0;
          continue;
        }
        if (this.upstreamFailure !== undefined) throw this.upstreamFailure;
        if (this.complete) {
          for (const tail of decoder.end()) {
            this.eventCame();
            yield tail;
          }
          return;
        }
        await new Promise<void>((resolve) => {
          this.wake = resolve;
        });
      }
    } finally {
      // The consumer left the loop, the stream ended or failed: nothing more is read.
      this.halt('closed');
    }
  }

  private decode(decoder: SseDecoder, chunk: Buffer): SseEvent[] {
    try {
      return decoder.push(chunk);
    } catch (error) {
      if (!(error instanceof SseEventTooLargeError)) throw error;
      const failure = new UpstreamError(
        'bad_response',
        `upstream ${this.host} sent an event larger than ${error.limit} bytes`,
        { status: this.status, cause: error },
      );
      this.halt(failure);
      throw failure;
    }
  }

  /** Takes the oldest queued chunk; once the consumer has taken them all, a paused upstream resumes. */
  private take(): Buffer | undefined {
    const chunk = this.queue.shift();
    if (chunk === undefined) return undefined;
    this.queuedBytes -= chunk.length;
    if (this.paused && this.queuedBytes === 0) {
      this.paused = false;
      this.resumeRequest?.();
    }
    return chunk;
  }

  private beginWait(): void {
    if (this.ended || !this.firstEventCame || this.waitingSince >= 0) return;
    this.waitingSince = Date.now();
    this.idleTimer ??= setTimeout(onIdleCheck, Math.max(1, this.opts.idleTimeoutMs), this);
  }

  private eventCame(): void {
    this.waitingSince = -1;
    if (this.firstEventCame) return;
    this.firstEventCame = true;
    clearTimeout(this.firstByteTimer);
  }

  private wakeConsumer(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  /** Stops the call on our side: aborts the request (later, if undici has not started it yet). */
  private halt(stop: Stop): void {
    if (this.ended) return;
    this.stop = stop;
    this.finish();
    this.abortRequest?.(stopError(stop));
    if (!this.settled) {
      this.settled = true;
      // `closed` only comes once the stream was handed over (settled).
      if (stop !== 'closed') this.reject(stop);
      return;
    }
    this.wakeConsumer();
  }

  private finish(): void {
    this.ended = true;
    clearTimeout(this.firstByteTimer);
    clearTimeout(this.deadlineTimer);
    clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    this.opts.signal?.removeEventListener('abort', this);
    this.chunks = [];
    this.queue = [];
    this.queuedBytes = 0;
  }

  private toUpstreamError(error: Error): UpstreamError {
    if (error instanceof UpstreamError) return error;
    const code = findErrorCode(error);
    const timedOut = code !== undefined && TIMEOUT_CODES.has(code);
    const what = timedOut ? 'timed out' : 'connection failed';
    return new UpstreamError(
      timedOut ? 'timeout' : 'connect',
      `upstream ${this.host} ${what}${code === undefined ? '' : ` (${code})`}`,
      { cause: error },
    );
  }
}

function stopError(stop: Stop): Error {
  return stop === 'closed' ? new Error('upstream stream closed by the gateway') : stop;
}

function onFirstByteTimeout(call: UpstreamStreamCall): void {
  call.firstByteTimeout();
}

function onDeadline(call: UpstreamStreamCall): void {
  call.deadline();
}

function onIdleCheck(call: UpstreamStreamCall): void {
  call.idleCheck();
}
