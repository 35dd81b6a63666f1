import type { GatewayError } from '../errors.js';
import { errorBody } from '../errors.js';
import type { ChatCompletion } from '../gateway/types.js';
import type { StreamDelta } from '../providers/types.js';
import { billOf } from './chat-completion-body.js';

/**
 * Writes a streamed answer as OpenAI's `chat.completion.chunk` server-sent events: one chunk per delta,
 * the role in each choice's first chunk, tool calls as `tool_calls` pieces (id, type and name in a call's
 * first piece), `finish_reason` in a chunk of its own, then — always, whether or not the caller asked
 * for `stream_options.include_usage` — one chunk with `choices: []`, the `usage` (with `cost`) and
 * Tollgate's `meta`, and `data: [DONE]`.
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
      if (last !== undefined) out += this.event(`[${JSON.stringify(last)}]`);
      last = this.choiceOf(delta);
    }
    if (last !== undefined) out += this.event(`[${JSON.stringify(last)}]`);
    return out;
  }

  /** The last chunk: no choices, the call's `usage` and `meta`. */
  bill(completion: ChatCompletion): string {
    const { usage, meta } = billOf(completion);
    return `data: ${this.head},"choices":[],"usage":${JSON.stringify(usage)},"meta":${JSON.stringify(meta)}}\n\n`;
  }

  /** The end of a stream that completed. */
  done(): string {
    return 'data: [DONE]\n\n';
  }

  /** An error in OpenAI's streaming shape (the stream ends after it, without `[DONE]`). */
  error(error: GatewayError): string {
    return `data: ${JSON.stringify(errorBody(error))}\n\n`;
  }

  private event(choices: string): string {
    return `data: ${this.head},"choices":${choices}${this.usageNull ? ',"usage":null' : ''}}\n\n`;
  }

  private choiceOf(delta: StreamDelta): Record<string, unknown> | undefined {
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
