import type { FastifyReply } from 'fastify';
import type { GatewayError } from '../../errors.js';
import type { StreamOutcome, StreamSink, StreamStart } from '../../gateway/types.js';
import type { FinishReason, StreamDelta } from '../../providers/types.js';
import { SseChannel } from '../sse-channel.js';
import { messageIdOf, stopReasonOf, usageOf } from './messages-body.js';
import { messagesErrorBody } from './messages-error.js';

function event(name: string, data: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
}

/**
 * A streamed Messages answer: Anthropic's server-sent events (`message_start`, content blocks,
 * `message_delta` with the usage, `message_stop`; `error` after a cut). A request passed through to an
 * Anthropic upstream gets the upstream's events as they came (thinking and its signatures included);
 * any other answer's deltas are written as those events here.
 */
export class MessagesStream implements StreamSink {
  private readonly channel: SseChannel;
  /** The upstream's own events are relayed (a request passed through). */
  private relayed = false;
  private started = false;
  private model = '';
  /** The content block open now (written), and its kind; -1 before the first. */
  private block = -1;
  private blockKind: 'text' | 'tool' | undefined;
  private readonly toolBlocks = new Map<number, number>();
  private stopReason: FinishReason | undefined;

  constructor(
    reply: FastifyReply,
    private readonly ids: { requestId: string },
    limits: { stallTimeoutMs: number; deadline: number },
    /** The `x-tollgate-dropped-params` of the answer, given the provider that serves it. */
    private readonly droppedFor: (start: StreamStart) => string[],
  ) {
    this.channel = new SseChannel(reply, limits);
  }

  get begun(): boolean {
    return this.channel.begun;
  }

  get clientGone(): boolean {
    return this.channel.clientGone;
  }

  onClientGone(listener: () => void): void {
    this.channel.onClientGone(listener);
  }

  begin(start: StreamStart): void {
    const headers: Record<string, string> = {};
    const dropped = this.droppedFor(start);
    if (dropped.length > 0) headers['x-tollgate-dropped-params'] = dropped.join(',');
    if (start.replayed === true) headers['idempotent-replayed'] = 'true';
    this.model = start.model;
    this.channel.open(headers);
  }

  send(deltas: readonly StreamDelta[]): Promise<void> | undefined {
    if (!this.relayed && !this.started && deltas.some((d) => d.type === 'event')) this.relayed = true;
    let out = '';
    if (this.relayed) {
      for (const delta of deltas) {
        if (delta.type === 'event') out += `event: ${delta.name}\ndata: ${delta.data}\n\n`;
      }
      return this.channel.write(out);
    }
    if (!this.started) {
      this.started = true;
      out += event('message_start', {
        type: 'message_start',
        message: {
          id: messageIdOf({ id: this.ids.requestId }),
          type: 'message',
          role: 'assistant',
          model: this.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: 0, output_tokens: 0 },
        },
      });
    }
    for (const delta of deltas) out += this.translate(delta);
    return this.channel.write(out);
  }

  /** Ends the stream: the stop reason and the billed usage, then `message_stop` — or the error event. */
  finish(outcome: StreamOutcome): void {
    let out = '';
    if (!this.relayed) {
      out += this.closeBlock();
      if (outcome.error === undefined) {
        out += event('message_delta', {
          type: 'message_delta',
          delta: { stop_reason: stopReasonOf(this.stopReason ?? 'length'), stop_sequence: null },
          usage: usageOf(outcome.completion),
        });
        out += event('message_stop', { type: 'message_stop' });
      }
    }
    if (outcome.error !== undefined) out += event('error', messagesErrorBody(outcome.error));
    this.channel.end(out);
  }

  /** Ends a begun stream with an error event (a failure of the gateway's own after the first byte). */
  fail(error: GatewayError): void {
    this.channel.end(event('error', messagesErrorBody(error)));
  }

  private closeBlock(): string {
    if (this.blockKind === undefined) return '';
    this.blockKind = undefined;
    return event('content_block_stop', { type: 'content_block_stop', index: this.block });
  }

  private openBlock(kind: 'text' | 'tool', block: Record<string, unknown>): string {
    const out = this.closeBlock();
    this.block += 1;
    this.blockKind = kind;
    return (
      out +
      event('content_block_start', { type: 'content_block_start', index: this.block, content_block: block })
    );
  }

  private translate(delta: StreamDelta): string {
    switch (delta.type) {
      case 'text':
      case 'refusal': {
        const open = this.blockKind === 'text' ? '' : this.openBlock('text', { type: 'text', text: '' });
        return (
          open +
          event('content_block_delta', {
            type: 'content_block_delta',
            index: this.block,
            delta: { type: 'text_delta', text: delta.text },
          })
        );
      }
      case 'tool_call': {
        let out = '';
        if (!this.toolBlocks.has(delta.index)) {
          out += this.openBlock('tool', {
            type: 'tool_use',
            id: delta.id ?? '',
            name: delta.name ?? '',
            input: {},
          });
          this.toolBlocks.set(delta.index, this.block);
        }
        const index = this.toolBlocks.get(delta.index);
        if (delta.arguments === '' || index !== this.block) return out;
        return (
          out +
          event('content_block_delta', {
            type: 'content_block_delta',
            index,
            delta: { type: 'input_json_delta', partial_json: delta.arguments },
          })
        );
      }
      case 'finish':
        this.stopReason = delta.reason;
        return '';
      case 'logprobs':
      case 'event':
        return '';
    }
  }
}
