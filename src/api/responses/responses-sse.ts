import type { FastifyReply } from 'fastify';
import type { GatewayError } from '../../errors.js';
import type { StreamOutcome, StreamSink, StreamStart } from '../../gateway/types.js';
import type { FinishReason, StreamDelta } from '../../providers/types.js';
import { SseChannel } from '../sse-channel.js';
import type { ResponsesRequest } from './read-request.js';
import {
  functionCallItem,
  type ItemStatus,
  incompleteReasonOf,
  itemIdOf,
  messageItem,
  outputTextPart,
  type ResponseFrame,
  type ResponseStatus,
  refusalPart,
  responseIdOf,
  responseObject,
} from './response-body.js';

type Json = Record<string, unknown>;

/** The assistant message being streamed: its place in `output`, and its parts so far. */
interface OpenMessage {
  outputIndex: number;
  id: string;
  parts: Array<{ type: 'output_text'; text: string } | { type: 'refusal'; text: string }>;
}

interface OpenCall {
  outputIndex: number;
  id: string;
  callId: string;
  name: string;
  arguments: string;
}

/**
 * A streamed answer in the Responses API's typed server-sent events (`event: <type>` and a `data:` JSON
 * object with the same `type` and a `sequence_number`): `response.created`, `response.in_progress`, the
 * output items as they are written (`response.output_item.added`, `response.content_part.added`,
 * `response.output_text.delta`, `response.function_call_arguments.delta`, then their `…done` events),
 * and one last event with the whole response, billed: `response.completed`, `response.incomplete` (capped,
 * filtered, or the client left) or `response.failed` (the upstream broke off), each with `usage` and
 * Tollgate's `meta`. Writes follow the client's pace through the doors' shared `SseChannel`.
 */
export class ResponsesSse implements StreamSink {
  private frame: ResponseFrame | undefined;
  private sequence = 0;
  private readonly output: Json[] = [];
  private message: OpenMessage | undefined;
  private readonly calls = new Map<number, OpenCall>();
  private finishReason: FinishReason | undefined;
  private readonly channel: SseChannel;

  constructor(
    reply: FastifyReply,
    private readonly request: {
      frame: Omit<ResponseFrame, 'model'>;
      namespaced: ResponsesRequest['namespaced'];
      /** Fields this door left out, named beside the adapter's. */
      dropped: readonly string[];
    },
    limits: { stallTimeoutMs: number; deadline: number },
  ) {
    this.channel = new SseChannel(reply, limits);
  }

  get begun(): boolean {
    return this.frame !== undefined;
  }

  get clientGone(): boolean {
    return this.channel.clientGone;
  }

  onClientGone(listener: () => void): void {
    this.channel.onClientGone(listener);
  }

  begin(start: StreamStart & { replayed?: boolean }): void {
    const dropped = [...this.request.dropped, ...start.droppedParams];
    const headers: Record<string, string> = {};
    if (dropped.length > 0) headers['x-tollgate-dropped-params'] = dropped.join(',');
    if (start.replayed === true) headers['idempotent-replayed'] = 'true';
    this.channel.open(headers);
    this.frame = { ...this.request.frame, model: start.model };
    // A replay is the first answer again: its id too.
    if (start.replayed === true && start.id !== undefined) this.frame.id = responseIdOf(start.id);
    const response = responseObject(this.frame, { status: 'in_progress', output: [] });
    this.write(
      this.event('response.created', { response }) + this.event('response.in_progress', { response }),
    );
  }

  send(deltas: readonly StreamDelta[]): Promise<void> | undefined {
    let out = '';
    for (const delta of deltas) {
      if (delta.choice !== 0) continue;
      switch (delta.type) {
        case 'text':
        case 'refusal':
          out += this.part(delta.type === 'text' ? 'output_text' : 'refusal', delta.text);
          break;
        case 'tool_call':
          out += this.callPiece(delta);
          break;
        case 'finish':
          this.finishReason = delta.reason;
          break;
        case 'logprobs':
          break;
      }
    }
    return this.write(out);
  }

  /** Ends the stream: every open item done, then the billed response in its last event. */
  finish(outcome: StreamOutcome): void {
    const reason = incompleteReasonOf(this.finishReason);
    let status: ResponseStatus = 'completed';
    let type = 'response.completed';
    if (outcome.error !== undefined) {
      status = 'failed';
      type = 'response.failed';
    } else if (outcome.ending !== 'completed' || reason !== null) {
      status = 'incomplete';
      type = 'response.incomplete';
    }
    const itemStatus: ItemStatus = status === 'completed' ? 'completed' : 'incomplete';
    let out = this.closeItems(itemStatus);
    const response = responseObject(this.started(), {
      status,
      output: this.output,
      completion: outcome.completion,
      incompleteReason: status === 'incomplete' ? (reason ?? 'interrupted') : null,
      ...(outcome.error === undefined ? {} : { error: outcome.error }),
    });
    out += this.event(type, { response });
    this.end(out);
  }

  /** Ends a begun stream with an `error` event (a failure of the gateway's own after the first byte). */
  fail(error: GatewayError): void {
    this.started();
    this.end(this.event('error', { code: error.code, message: error.message, param: error.param ?? null }));
  }

  private started(): ResponseFrame {
    if (this.frame === undefined) throw new Error('the stream has not begun');
    return this.frame;
  }

  private event(type: string, fields: Json): string {
    const data = JSON.stringify({ type, ...fields, sequence_number: this.sequence++ });
    return `event: ${type}\ndata: ${data}\n\n`;
  }

  private get responseId(): string {
    return this.frame?.id ?? this.request.frame.id;
  }

  /** A piece of text or refusal: the message and its part opened first when they are not. */
  private part(type: 'output_text' | 'refusal', text: string): string {
    let out = '';
    if (this.message === undefined) {
      const outputIndex = this.output.length;
      const id = itemIdOf('msg', this.responseId, outputIndex);
      this.message = { outputIndex, id, parts: [] };
      const item = messageItem(id, [], 'in_progress');
      this.output.push(item);
      out += this.event('response.output_item.added', { output_index: outputIndex, item });
    }
    const message = this.message;
    let contentIndex = message.parts.length - 1;
    if (message.parts[contentIndex]?.type !== type) {
      message.parts.push({ type, text: '' });
      contentIndex = message.parts.length - 1;
      out += this.event('response.content_part.added', {
        item_id: message.id,
        output_index: message.outputIndex,
        content_index: contentIndex,
        part: type === 'output_text' ? outputTextPart('') : refusalPart(''),
      });
    }
    (message.parts[contentIndex] as { text: string }).text += text;
    const where = { item_id: message.id, output_index: message.outputIndex, content_index: contentIndex };
    if (type === 'output_text') {
      out += this.event('response.output_text.delta', { ...where, delta: text, logprobs: [] });
    } else out += this.event('response.refusal.delta', { ...where, delta: text });
    return out;
  }

  private callPiece(delta: Extract<StreamDelta, { type: 'tool_call' }>): string {
    let out = '';
    let call = this.calls.get(delta.index);
    if (call === undefined) {
      out += this.closeMessage('completed');
      const outputIndex = this.output.length;
      const id = itemIdOf('fc', this.responseId, outputIndex);
      call = { outputIndex, id, callId: delta.id ?? `call_${id}`, name: delta.name ?? '', arguments: '' };
      this.calls.set(delta.index, call);
      const item = functionCallItem(id, { ...call, id: call.callId }, this.request.namespaced, 'in_progress');
      this.output.push(item);
      out += this.event('response.output_item.added', { output_index: outputIndex, item });
    }
    if (delta.arguments !== '') {
      call.arguments += delta.arguments;
      out += this.event('response.function_call_arguments.delta', {
        item_id: call.id,
        output_index: call.outputIndex,
        delta: delta.arguments,
      });
    }
    return out;
  }

  private closeMessage(status: ItemStatus): string {
    const message = this.message;
    if (message === undefined) return '';
    this.message = undefined;
    let out = '';
    const content: Json[] = [];
    for (const [contentIndex, part] of message.parts.entries()) {
      const where = { item_id: message.id, output_index: message.outputIndex, content_index: contentIndex };
      const done = part.type === 'output_text' ? outputTextPart(part.text) : refusalPart(part.text);
      if (part.type === 'output_text') {
        out += this.event('response.output_text.done', { ...where, text: part.text, logprobs: [] });
      } else out += this.event('response.refusal.done', { ...where, refusal: part.text });
      out += this.event('response.content_part.done', { ...where, part: done });
      content.push(done);
    }
    const item = messageItem(message.id, content, status);
    this.output[message.outputIndex] = item;
    return out + this.event('response.output_item.done', { output_index: message.outputIndex, item });
  }

  private closeItems(status: ItemStatus): string {
    let out = this.closeMessage(status);
    for (const call of this.calls.values()) {
      const item = functionCallItem(call.id, { ...call, id: call.callId }, this.request.namespaced, status);
      this.output[call.outputIndex] = item;
      out += this.event('response.function_call_arguments.done', {
        item_id: call.id,
        output_index: call.outputIndex,
        name: item.name,
        arguments: call.arguments,
      });
      out += this.event('response.output_item.done', { output_index: call.outputIndex, item });
    }
    this.calls.clear();
    return out;
  }

  private write(text: string): Promise<void> | undefined {
    return this.channel.write(text);
  }

  private end(text: string): void {
    this.channel.end(text);
  }
}
