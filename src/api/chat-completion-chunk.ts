import type { GatewayError } from '../errors.js';
import { errorBody } from '../errors.js';
import type { ChatCompletion } from '../gateway/types.js';
import type { StreamDelta } from '../providers/types.js';
import { billOf } from './chat-completion-body.js';

/**
 * Writes a streamed answer as OpenAI's `chat.completion.chunk` server-sent events: one chunk per delta,
 * the role in each choice's first chunk, tool calls as `tool_calls` pieces (id, type and name in a call's
 * first piece), `finish_reason` in a chunk of its own, then `data: [DONE]`. The bill — `usage` (with
 * `cost`) and Tollgate's `meta` — always comes: with `stream_options.include_usage`, as OpenAI sends
 * usage, in a last chunk of its own with `choices: []`; without it, on the chunk with the (last)
 * `finish_reason`, so that a loop reading `choices[0]` of every chunk never meets an empty list. Those
 * finish chunks wait for the bill (one per choice at most); a stream cut before any finish carries the
 * bill on a chunk with an empty delta for choice 0 and `finish_reason: null`.
 *
 * @see https://platform.openai.com/docs/api-reference/chat-streaming/streaming
 */
export class ChunkWriter {
  /** The fields every chunk starts with, as JSON text without the closing brace. */
  private readonly head: string;
  private readonly roleSent: boolean[] = [];
  /** Legacy callers (`functions`) get the one call they can take, as `function_call`. */
  private readonly legacy: boolean;
  /** With `include_usage`, OpenAI writes `"usage": null` on every chunk before the last. */
  private readonly usageNull: boolean;
  /** Without `include_usage`: the choices with a `finish_reason` (JSON), held back for the bill. */
  private readonly finishes: string[] = [];

  constructor(options: {
    id: string;
    created: number;
    model: string;
    includeUsage: boolean;
    legacyFunctions: boolean;
  }) {
    this.head =
      `{"id":${JSON.stringify(options.id)},"object":"chat.completion.chunk",` +
      `"created":${options.created},"model":${JSON.stringify(options.model)}`;
    this.legacy = options.legacyFunctions;
    this.usageNull = options.includeUsage;
  }

  /**
   * The events of some deltas, as one string to write. Log probabilities go in the chunk of the piece
   * they came with (an upstream event's text, then its logprobs), as OpenAI sends them.
   */
  events(deltas: readonly StreamDelta[]): string {
    let out = '';
    let last: Record<string, unknown> | undefined;
    for (const delta of deltas) {
      if (
        delta.type === 'logprobs' &&
        last !== undefined &&
        last.index === delta.choice &&
        last.logprobs === undefined &&
        last.finish_reason === null
      ) {
        last = { index: last.index, delta: last.delta, logprobs: delta.logprobs, finish_reason: null };
        continue;
      }
      if (last !== undefined) out += this.chunkOf(last);
      last = this.choiceOf(delta);
    }
    if (last !== undefined) out += this.chunkOf(last);
    return out;
  }

  /**
   * The bill: with `include_usage`, a chunk of its own with no choices; without it, the finish chunks
   * held back, the last of them carrying `usage` and `meta`.
   */
  bill(completion: ChatCompletion): string {
    const { usage, meta } = billOf(completion);
    const billed = `"usage":${JSON.stringify(usage)},"meta":${JSON.stringify(meta)}}\n\n`;
    if (this.usageNull) return `data: ${this.head},"choices":[],${billed}`;
    const last = this.finishes.pop() ?? '{"index":0,"delta":{},"finish_reason":null}';
    return `${this.heldBack()}data: ${this.head},"choices":[${last}],${billed}`;
  }

  /** The finish chunks still held back (when the stream ends without a bill). */
  heldBack(): string {
    let out = '';
    for (const choice of this.finishes.splice(0)) out += this.event(`[${choice}]`);
    return out;
  }

  /** The end of a stream that completed. */
  done(): string {
    return 'data: [DONE]\n\n';
  }

  /** An error in OpenAI's streaming shape (the stream ends after it, without `[DONE]`). */
  error(error: GatewayError): string {
    return `data: ${JSON.stringify(errorBody(error))}\n\n`;
  }

  /** One choice's chunk, or nothing yet for a finish that waits for the bill. */
  private chunkOf(choice: Record<string, unknown>): string {
    const json = JSON.stringify(choice);
    if (!this.usageNull && choice.finish_reason !== null) {
      this.finishes.push(json);
      return '';
    }
    return this.event(`[${json}]`);
  }

  private event(choices: string): string {
    return `data: ${this.head},"choices":${choices}${this.usageNull ? ',"usage":null' : ''}}\n\n`;
  }

  private choiceOf(delta: StreamDelta): Record<string, unknown> | undefined {
    // A relayed upstream event belongs to another door's stream; its content comes as the other deltas.
    if (delta.type === 'event') return undefined;
    const index = delta.choice;
    const body: Record<string, unknown> = {};
    if (this.roleSent[index] !== true && delta.type !== 'finish') {
      body.role = 'assistant';
      this.roleSent[index] = true;
    }
    let finish: string | null = null;
    let logprobs: Record<string, unknown> | undefined;
    switch (delta.type) {
      case 'text':
        body.content = delta.text;
        break;
      case 'refusal':
        body.refusal = delta.text;
        break;
      case 'tool_call':
        if (this.legacy) {
          if (delta.index > 0) return undefined;
          const piece: Record<string, string> = {};
          if (delta.name !== undefined) piece.name = delta.name;
          piece.arguments = delta.arguments;
          body.function_call = piece;
        } else {
          const call: Record<string, unknown> = { index: delta.index };
          if (delta.id !== undefined) call.id = delta.id;
          if (delta.id !== undefined || delta.name !== undefined) call.type = 'function';
          const fn: Record<string, string> = {};
          if (delta.name !== undefined) fn.name = delta.name;
          fn.arguments = delta.arguments;
          call.function = fn;
          body.tool_calls = [call];
        }
        break;
      case 'logprobs':
        logprobs = delta.logprobs;
        break;
      case 'finish':
        finish = this.legacy && delta.reason === 'tool_calls' ? 'function_call' : delta.reason;
        break;
    }
    const choice: Record<string, unknown> = { index, delta: body };
    if (logprobs !== undefined) choice.logprobs = logprobs;
    choice.finish_reason = finish;
    return choice;
  }
}
