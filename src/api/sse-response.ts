import type { FastifyReply } from 'fastify';
import type { GatewayError } from '../errors.js';
import type { StreamOutcome, StreamSink, StreamStart } from '../gateway/types.js';
import type { StreamDelta } from '../providers/types.js';
import { ChunkWriter } from './chat-completion-chunk.js';

/**
 * A streamed answer's HTTP response: server-sent events written as the gateway relays them. Nothing is
 * sent before `begin` (so a failure until then is an ordinary JSON error answer). Writes follow the
 * client's pace: when the socket's buffer is full, `send` returns a promise that settles on 'drain', and
 * the gateway reads nothing more from the upstream meanwhile — a slow reader never makes the gateway
 * buffer more than about one event beyond the socket's own buffer. A client that takes nothing for
 * `stallTimeoutMs`, or is still behind at the stream's `deadline`, has its connection closed: the
 * gateway sees it gone, aborts the upstream and settles what was delivered (docs/api.md, Streaming).
 */
export class SseResponse implements StreamSink {
  private writer: ChunkWriter | undefined;
  private gone = false;
  private readonly goneListeners: Array<() => void> = [];

  constructor(
    private readonly reply: FastifyReply,
    private readonly chunk: { id: string; created: number; includeUsage: boolean; legacyFunctions: boolean },
    private readonly limits: { stallTimeoutMs: number; deadline: number; now?: () => number },
  ) {
    const response = reply.raw;
    response.on('close', () => {
      if (response.writableFinished) return;
      this.gone = true;
      for (const listener of this.goneListeners.splice(0)) listener();
    });
  }

  /** Whether the headers have gone out (after which errors are events, not answers). */
  get begun(): boolean {
    return this.writer !== undefined;
  }

  get clientGone(): boolean {
    return this.gone;
  }

  onClientGone(listener: () => void): void {
    if (this.gone) listener();
    else this.goneListeners.push(listener);
  }

  begin(start: StreamStart & { replayed?: boolean }): void {
    const { reply } = this;
    reply.hijack();
    const headers: Record<string, string | number | string[]> = {};
    for (const [name, value] of Object.entries(reply.getHeaders())) {
      if (value !== undefined) headers[name] = value;
    }
    headers['content-type'] = 'text/event-stream; charset=utf-8';
    headers['cache-control'] = 'no-cache';
    // nginx and other proxies buffer responses unless told not to; an event must go out as it is written.
    headers['x-accel-buffering'] = 'no';
    if (start.droppedParams.length > 0) headers['x-tollgate-dropped-params'] = start.droppedParams.join(',');
    if (start.replayed === true) headers['idempotent-replayed'] = 'true';
    reply.raw.writeHead(200, headers);
    this.writer = new ChunkWriter({
      ...this.chunk,
      id: start.id ?? this.chunk.id,
      created: start.created ?? this.chunk.created,
      model: start.model,
    });
  }

  send(deltas: readonly StreamDelta[]): Promise<void> | undefined {
    return this.write(this.started().events(deltas));
  }

  /**
   * Ends the stream: the bill (on its own chunk, or on the finish chunk: `ChunkWriter.bill`), then
   * `[DONE]` — or, after an upstream cut, the bill and the error event.
   */
  finish(outcome: StreamOutcome): void {
    const writer = this.started();
    const last = outcome.error === undefined ? writer.done() : writer.error(outcome.error);
    this.end(writer.bill(outcome.completion) + last);
  }

  /** Ends a begun stream with an error event (a failure of the gateway's own after the first byte). */
  fail(error: GatewayError): void {
    const writer = this.started();
    this.end(writer.heldBack() + writer.error(error));
  }

  private started(): ChunkWriter {
    if (this.writer === undefined) throw new Error('the stream has not begun');
    return this.writer;
  }

  private write(text: string): Promise<void> | undefined {
    const response = this.reply.raw;
    if (this.gone || text === '') return undefined;
    if (response.write(text)) return undefined;
    // A connection closed for stalling emits 'close' too: the relay then finds the client gone.
    const now = this.limits.now ?? Date.now;
    const wait = Math.min(this.limits.stallTimeoutMs, this.limits.deadline - now());
    return new Promise((resolve) => this.cutUnless(['drain', 'close'], Math.max(0, wait), resolve));
  }

  /**
   * The last events (the call is settled by now): a client that never takes them still has its
   * connection closed, after the stall timeout — not at the deadline, which an upstream cut at the
   * deadline reaches just as it sends them.
   */
  private end(text: string): void {
    const response = this.reply.raw;
    response.end(text);
    if (!this.gone && !response.writableFinished) {
      this.cutUnless(['finish', 'close'], this.limits.stallTimeoutMs, () => {});
    }
  }

  /** Closes the connection unless one of `events` comes within `wait` ms; `then` runs on the first of them. */
  private cutUnless(events: readonly ('drain' | 'close' | 'finish')[], wait: number, then: () => void): void {
    const response = this.reply.raw;
    const done = (): void => {
      clearTimeout(timer);
      for (const event of events) response.off(event, done);
      then();
    };
    // A client that takes nothing is treated as one that left: its socket goes, and with it what is
    // buffered for it.
    const timer = setTimeout(() => response.destroy(), wait);
    for (const event of events) response.on(event, done);
  }
}
