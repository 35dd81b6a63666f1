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
 * buffer more than about one event beyond the socket's own buffer.
 */
export class SseResponse implements StreamSink {
  private writer: ChunkWriter | undefined;
  private gone = false;
  private readonly goneListeners: Array<() => void> = [];

  constructor(
    private readonly reply: FastifyReply,
    private readonly chunk: { id: string; created: number; includeUsage: boolean; legacyFunctions: boolean },
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
    this.reply.raw.end(writer.bill(outcome.completion) + last);
  }

  /** Ends a begun stream with an error event (a failure of the gateway's own after the first byte). */
  fail(error: GatewayError): void {
    const writer = this.started();
    this.reply.raw.end(writer.heldBack() + writer.error(error));
  }

  private started(): ChunkWriter {
    if (this.writer === undefined) throw new Error('the stream has not begun');
    return this.writer;
  }

  private write(text: string): Promise<void> | undefined {
    const response = this.reply.raw;
    if (this.gone || text === '') return undefined;
    if (response.write(text)) return undefined;
    return new Promise((resolve) => {
      const done = (): void => {
        response.off('drain', done);
        response.off('close', done);
        resolve();
      };
      response.on('drain', done);
      response.on('close', done);
    });
  }
}
