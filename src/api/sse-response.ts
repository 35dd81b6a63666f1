import type { FastifyReply } from 'fastify';
import type { GatewayError } from '../errors.js';
import type { StreamOutcome, StreamSink, StreamStart } from '../gateway/types.js';
import type { StreamDelta } from '../providers/types.js';
import { ChunkWriter } from './chat-completion-chunk.js';
import { SseChannel } from './sse-channel.js';

/**
 * A streamed answer's HTTP response (the chat door's `chat.completion.chunk` events over `SseChannel`):
 * server-sent events written as the gateway relays them. Nothing is
 * sent before `begin` (so a failure until then is an ordinary JSON error answer). Writes follow the
 * client's pace: when the socket's buffer is full, `send` returns a promise that settles on 'drain', and
 * the gateway reads nothing more from the upstream meanwhile — a slow reader never makes the gateway
 * buffer more than about one event beyond the socket's own buffer. A client that takes nothing for
 * `stallTimeoutMs`, or is still behind at the stream's `deadline`, has its connection closed: the
 * gateway sees it gone, aborts the upstream and settles what was delivered (docs/api.md, Streaming).
 */
export class SseResponse implements StreamSink {
  private writer: ChunkWriter | undefined;
  private readonly channel: SseChannel;

  constructor(
    reply: FastifyReply,
    private readonly chunk: { id: string; created: number; includeUsage: boolean; legacyFunctions: boolean },
    limits: { stallTimeoutMs: number; deadline: number; now?: () => number },
  ) {
    this.channel = new SseChannel(reply, limits);
  }

  /** Whether the headers have gone out (after which errors are events, not answers). */
  get begun(): boolean {
    return this.writer !== undefined;
  }

  get clientGone(): boolean {
    return this.channel.clientGone;
  }

  onClientGone(listener: () => void): void {
    this.channel.onClientGone(listener);
  }

  begin(start: StreamStart & { replayed?: boolean }): void {
    const headers: Record<string, string> = {};
    if (start.droppedParams.length > 0) headers['x-tollgate-dropped-params'] = start.droppedParams.join(',');
    if (start.replayed === true) headers['idempotent-replayed'] = 'true';
    this.channel.open(headers);
    this.writer = new ChunkWriter({
      ...this.chunk,
      id: start.id ?? this.chunk.id,
      created: start.created ?? this.chunk.created,
      model: start.model,
    });
  }

  send(deltas: readonly StreamDelta[]): Promise<void> | undefined {
    return this.channel.write(this.started().events(deltas));
  }

  /**
   * Ends the stream: the bill (on its own chunk, or on the finish chunk: `ChunkWriter.bill`), then
   * `[DONE]` — or, after an upstream cut, the bill and the error event.
   */
  finish(outcome: StreamOutcome): void {
    const writer = this.started();
    const last = outcome.error === undefined ? writer.done() : writer.error(outcome.error);
    this.channel.end(writer.bill(outcome.completion) + last);
  }

  /** Ends a begun stream with an error event (a failure of the gateway's own after the first byte). */
  fail(error: GatewayError): void {
    const writer = this.started();
    this.channel.end(writer.heldBack() + writer.error(error));
  }

  private started(): ChunkWriter {
    if (this.writer === undefined) throw new Error('the stream has not begun');
    return this.writer;
  }
}
