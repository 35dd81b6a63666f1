import { indexWithin, MAX_CONTENT_BLOCKS } from '../answer-index.js';
import { badResponse, isRecord, parseEventObject } from '../json-value.js';
import { ReasoningTally } from '../reasoning-tally.js';
import { errorEventBody, streamedFailure } from '../streamed-failure.js';
import type {
  ProviderConfig,
  ReasoningOutput,
  StreamDelta,
  StreamParser,
  UpstreamChatRequest,
  UpstreamUsage,
} from '../types.js';
import { anthropicErrorReader } from './anthropic-error.js';
import { anthropicRefusalExplanation } from './anthropic-refusal-explanation.js';
import { convertAnthropicUsage } from './convert-anthropic-usage.js';
import { JSON_OBJECT_TOOL_NAME } from './json-object-tool.js';
import { mapAnthropicStopReason } from './map-anthropic-stop-reason.js';

/** What a content block of the stream is to the caller. */
type BlockRole =
  /** Text of the answer. */
  | { kind: 'text' }
  /** A tool call: its index among the answer's calls and whether any of its input came. */
  | { kind: 'tool'; index: number; input: unknown; inputSent: boolean }
  /** The forced JSON-mode tool's call: its input is the answer's text. */
  | { kind: 'json'; input: unknown; inputSent: boolean }
  /** Thinking, redacted thinking, server tools and anything newer: not part of an OpenAI answer. */
  | { kind: 'other' };

const OTHER: BlockRole = Object.freeze({ kind: 'other' });

/**
 * Reads an Anthropic Messages stream (`stream: true`) as one choice, the way `parseAnthropicResponse`
 * reads an answer:
 * - `message_start`: the model, and the usage so far;
 * - a `text` block's `text_delta`s are text;
 * - a `tool_use` block is a tool call, numbered 0, 1, 2… in the order of the blocks: its first delta
 *   carries the block's `id` and `name` (and no arguments), each `input_json_delta.partial_json` is a piece
 *   of its arguments; a block whose input came whole at its start (none streamed) sends that input at its
 *   end, `{}` when it has none;
 * - for `response_format: json_object`, the forced `JSON_OBJECT_TOOL` call is the answer: its input is
 *   streamed as text, and its `tool_use` stop is `stop`. (The forced tool comes first: the model writes
 *   no text before it, which an answer that is not streamed would leave out);
 * - `thinking`, `redacted_thinking` and other blocks, and `thinking_delta`, `signature_delta` and
 *   `citations_delta`, are not part of the answer. Thinking is kept (`reasoning()`), as the upstream
 *   bills it: the text of `thinking` blocks and `thinking_delta`s, and the size of signatures (the block's
 *   and `signature_delta`s) and of `redacted_thinking` data — counted when the stream is cut, since the
 *   running `output_tokens` stays at its start value until `message_delta`;
 * - `message_delta`: the stop reason (`mapAnthropicStopReason`), sent as the finish of choice 0, after
 *   the refusal explanation when there is one; its `usage` counts are cumulative and replace those of
 *   `message_start` (a count it leaves out or sends as `null` keeps the earlier one), read by
 *   `convertAnthropicUsage` (prompt tokens include the cache reads and writes);
 * - `message_stop` ends the answer (`done`); `ping` and unknown events are ignored;
 * - an `error` event (`overloaded_error` mid-stream, say) is thrown as `streamedFailure`, its kind that
 *   of the status its type stands for.
 * An event that is not a JSON object cannot be read (`bad_response`).
 *
 * @see https://docs.anthropic.com/en/docs/build-with-claude/streaming
 * @see https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use#json-mode
 */
export function createAnthropicStreamParser(
  provider: ProviderConfig,
  request: UpstreamChatRequest,
): StreamParser {
  return new AnthropicStreamParser(
    provider.apiKey,
    request.responseFormat?.type === 'json_object',
    request.anthropic !== undefined,
  );
}

/** Events after which the answer's content has begun (a relayed stream's events are held until then). */
const CONTENT_EVENTS: ReadonlySet<unknown> = new Set([
  'content_block_delta',
  'content_block_stop',
  'message_delta',
  'message_stop',
]);

class AnthropicStreamParser implements StreamParser {
  private stopped = false;
  private finished = false;
  private modelName: string | undefined;
  /** The usage fields as last reported, merged: what `convertAnthropicUsage` reads. */
  private readonly reportedUsage: Record<string, unknown> = {};
  private converted: UpstreamUsage = { promptTokens: undefined, completionTokens: undefined };
  private readonly blocks = new Map<number, BlockRole>();
  private toolCalls = 0;
  private jsonBlockSeen = false;
  private readonly thought = new ReasoningTally();
  /** Relayed events not yet returned: those before the answer's content began. */
  private held: StreamDelta[] = [];

  constructor(
    private readonly secret: string | undefined,
    private readonly jsonMode: boolean,
    /** A request passed through: every event is returned as it came too (`type: 'event'`). */
    private readonly relay: boolean,
  ) {}

  event(data: string, name: string | undefined): StreamDelta[] {
    if (this.stopped) return [];
    if (name === 'error') throw streamedFailure(errorEventBody(data), anthropicErrorReader, this.secret);
    // Blank data is a keep-alive (some proxies send one): it says nothing.
    if (data.trim() === '') return [];
    const event = parseEventObject(data);
    const deltas: StreamDelta[] = [];
    switch (event.type) {
      case 'message_start':
        this.messageStart(event);
        break;
      case 'content_block_start':
        this.blockStart(event, deltas);
        break;
      case 'content_block_delta':
        this.blockDelta(event, deltas);
        break;
      case 'content_block_stop':
        this.blockStop(event, deltas);
        break;
      case 'message_delta':
        this.messageDelta(event, deltas);
        break;
      case 'message_stop':
        this.stopped = true;
        break;
      case 'error':
        throw streamedFailure(event, anthropicErrorReader, this.secret);
    }
    if (!this.relay) return deltas;
    // Relayed: events before the content are held, so the stream opens (and failover ends) only once
    // content comes, as for any other request.
    const type = typeof event.type === 'string' ? event.type : 'unknown';
    this.held.push({ type: 'event', choice: 0, name: name ?? type, data });
    if (deltas.length === 0 && !CONTENT_EVENTS.has(type)) return [];
    const out = this.held;
    this.held = [];
    out.push(...deltas);
    return out;
  }

  usage(): UpstreamUsage {
    return this.converted;
  }

  reasoning(): ReasoningOutput | undefined {
    return this.thought.output();
  }

  model(): string | undefined {
    return this.modelName;
  }

  done(): boolean {
    return this.stopped;
  }

  private messageStart(event: Record<string, unknown>): void {
    const { message } = event;
    if (!isRecord(message)) throw badResponse('upstream message_start has no message');
    if (typeof message.model === 'string' && message.model !== '') this.modelName = message.model;
    this.mergeUsage(message.usage);
  }

  private blockStart(event: Record<string, unknown>, deltas: StreamDelta[]): void {
    const index = blockIndex(event);
    const block = event.content_block;
    if (!isRecord(block)) throw badResponse('upstream content_block_start has no content_block');
    if (block.type === 'text') {
      this.blocks.set(index, { kind: 'text' });
      if (typeof block.text === 'string' && block.text !== '') {
        deltas.push({ type: 'text', choice: 0, text: block.text });
      }
      return;
    }
    if (block.type !== 'tool_use') {
      this.blocks.set(index, OTHER);
      if (block.type === 'thinking') {
        this.thought.text(index, block.thinking);
        this.thought.opaque(block.signature);
      } else if (block.type === 'redacted_thinking') this.thought.opaque(block.data);
      return;
    }
    if (this.jsonMode && block.name === JSON_OBJECT_TOOL_NAME) {
      // Only the first call of the JSON tool is the answer, as in an answer that is not streamed.
      this.blocks.set(
        index,
        this.jsonBlockSeen ? OTHER : { kind: 'json', input: block.input, inputSent: false },
      );
      this.jsonBlockSeen = true;
      return;
    }
    const { id, name } = block;
    if (typeof id !== 'string' || typeof name !== 'string') {
      throw badResponse('upstream tool_use block has no id or name');
    }
    const call = this.toolCalls;
    this.toolCalls += 1;
    this.blocks.set(index, { kind: 'tool', index: call, input: block.input, inputSent: false });
    deltas.push({ type: 'tool_call', choice: 0, index: call, id, name, arguments: '' });
  }

  private blockDelta(event: Record<string, unknown>, deltas: StreamDelta[]): void {
    const index = blockIndex(event);
    const role = this.blocks.get(index);
    const { delta } = event;
    if (role === undefined || !isRecord(delta)) return;
    if (delta.type === 'thinking_delta') this.thought.text(index, delta.thinking);
    else if (delta.type === 'signature_delta') this.thought.opaque(delta.signature);
    else if (delta.type === 'text_delta' && role.kind === 'text') {
      if (typeof delta.text === 'string' && delta.text !== '') {
        deltas.push({ type: 'text', choice: 0, text: delta.text });
      }
    } else if (delta.type === 'input_json_delta' && (role.kind === 'tool' || role.kind === 'json')) {
      const piece = delta.partial_json;
      if (typeof piece !== 'string' || piece === '') return;
      role.inputSent = true;
      deltas.push(
        role.kind === 'tool'
          ? { type: 'tool_call', choice: 0, index: role.index, arguments: piece }
          : { type: 'text', choice: 0, text: piece },
      );
    }
  }

  private blockStop(event: Record<string, unknown>, deltas: StreamDelta[]): void {
    const role = this.blocks.get(blockIndex(event));
    if (role === undefined || (role.kind !== 'tool' && role.kind !== 'json') || role.inputSent) return;
    role.inputSent = true;
    const whole = JSON.stringify(role.input ?? {});
    deltas.push(
      role.kind === 'tool'
        ? { type: 'tool_call', choice: 0, index: role.index, arguments: whole }
        : { type: 'text', choice: 0, text: whole },
    );
  }

  private messageDelta(event: Record<string, unknown>, deltas: StreamDelta[]): void {
    this.mergeUsage(event.usage);
    const { delta } = event;
    if (!isRecord(delta) || delta.stop_reason === undefined || delta.stop_reason === null) return;
    if (this.finished) return;
    this.finished = true;
    const explanation = anthropicRefusalExplanation(delta);
    if (explanation !== undefined) deltas.push({ type: 'refusal', choice: 0, text: explanation });
    let reason = mapAnthropicStopReason(delta.stop_reason);
    // The forced JSON tool's call is the answer, not a call for the caller to run.
    if (reason === 'tool_calls' && this.jsonBlockSeen && this.toolCalls === 0) reason = 'stop';
    deltas.push({ type: 'finish', choice: 0, reason });
  }

  private mergeUsage(usage: unknown): void {
    if (usage === undefined || usage === null) return;
    if (!isRecord(usage)) throw badResponse('upstream usage is not an object');
    for (const [field, value] of Object.entries(usage)) {
      if (value !== null && value !== undefined) this.reportedUsage[field] = value;
    }
    this.converted = convertAnthropicUsage(this.reportedUsage);
  }
}

/** A content block event's `index`: required, and below `MAX_CONTENT_BLOCKS`. */
function blockIndex(event: Record<string, unknown>): number {
  const { index } = event;
  if (index === undefined || index === null) throw badResponse('upstream content block event has no index');
  return indexWithin(index, 0, MAX_CONTENT_BLOCKS, 'content block');
}
