import { indexWithin, MAX_TOOL_CALLS_PER_CHOICE } from '../answer-index.js';
import { badResponse, isRecord } from '../json-value.js';
import type { StreamDelta } from '../types.js';
import { mapOpenAIFinishReason } from './map-openai-finish-reason.js';
import { openaiToolCallId } from './openai-tool-call-id.js';
import type { ChoicePlace } from './read-openai-tool-calls.js';

/** One tool call of a streamed choice, as its pieces arrive. */
interface StreamedCall {
  /** Its position among the choice's calls: the `index` the caller sees. */
  index: number;
  /** The id the upstream gave it, when it gave one. */
  upstreamId: string | undefined;
  name: string | undefined;
  /** Arguments that came before the name (held until the first piece can be sent). */
  pending: string;
  started: boolean;
}

/** The answer a streamed choice belongs to, for generated tool call ids. */
export type StreamPlace = Omit<ChoicePlace, 'choice'>;

/** Where the legacy `function_call` of a choice is kept among its tool calls. */
const FUNCTION_CALL_KEY = -1;

/**
 * One choice of an OpenAI-compatible stream: reads the `choices[]` element of each chunk into deltas.
 *
 * - text: `delta.content` when it is non-empty text; from hosts that send a list of parts (Mistral),
 *   its `text` parts (and its `refusal` parts as refusal); reasoning some hosts add (`reasoning_content`,
 *   `reasoning`, thinking parts) is not text;
 * - `delta.refusal` (structured-output refusals);
 * - tool calls: the pieces of `delta.tool_calls[]`, told apart by their `index`, renumbered 0, 1, 2… in
 *   the order they first appear. The first piece sent of a call carries its id and name (pieces before
 *   the name are held back); a call the host sent without an id gets one from `openaiToolCallId`, as in
 *   an answer that is not streamed but from its name alone (its arguments are not known yet); an id repeated on later pieces is not sent again, and a piece that
 *   brings another id and a name under an index already used (a host numbering every call 0) starts a
 *   new call. The legacy `delta.function_call` is one more call. Arguments given as a JSON object rather
 *   than text are serialised;
 * - `logprobs`, when the chunk has some, as the upstream sent them;
 * - `finish_reason`, once, through `mapOpenAIFinishReason`.
 *
 * @see https://platform.openai.com/docs/api-reference/chat-streaming/streaming
 * @see https://platform.openai.com/docs/guides/function-calling#streaming
 */
export class OpenAIStreamChoice {
  finished = false;
  private readonly calls = new Map<number, StreamedCall>();
  private callCount = 0;

  constructor(readonly index: number) {}

  /** Reads this choice's element of one chunk; `place` names the answer for generated tool call ids. */
  read(choice: Record<string, unknown>, place: StreamPlace, deltas: StreamDelta[]): void {
    const { delta } = choice;
    if (isRecord(delta)) {
      this.readContent(delta.content, deltas);
      if (typeof delta.refusal === 'string' && delta.refusal !== '') {
        deltas.push({ type: 'refusal', choice: this.index, text: delta.refusal });
      }
      const { tool_calls: toolCalls, function_call: functionCall } = delta;
      if (Array.isArray(toolCalls)) {
        for (const [position, piece] of (toolCalls as unknown[]).entries()) {
          if (!isRecord(piece)) throw badResponse('upstream stream tool call is not an object');
          const key = indexWithin(piece.index, position, MAX_TOOL_CALLS_PER_CHOICE, 'tool call');
          this.readCall(key, piece.id, piece.function, place, deltas);
        }
      } else if (toolCalls !== undefined && toolCalls !== null) {
        throw badResponse('upstream stream delta.tool_calls is not a list');
      } else if (isRecord(functionCall)) {
        this.readCall(FUNCTION_CALL_KEY, undefined, functionCall, place, deltas);
      }
    }
    if (hasLogprobs(choice.logprobs)) {
      deltas.push({ type: 'logprobs', choice: this.index, logprobs: choice.logprobs });
    }
    const reason = choice.finish_reason;
    if (reason !== undefined && reason !== null && !this.finished) {
      this.finished = true;
      deltas.push({ type: 'finish', choice: this.index, reason: mapOpenAIFinishReason(reason) });
    }
  }

  private readContent(content: unknown, deltas: StreamDelta[]): void {
    if (typeof content === 'string') {
      if (content !== '') deltas.push({ type: 'text', choice: this.index, text: content });
      return;
    }
    if (!Array.isArray(content)) return;
    for (const part of content as unknown[]) {
      if (!isRecord(part)) continue;
      if (part.type === 'text' && typeof part.text === 'string' && part.text !== '') {
        deltas.push({ type: 'text', choice: this.index, text: part.text });
      } else if (part.type === 'refusal' && typeof part.refusal === 'string' && part.refusal !== '') {
        deltas.push({ type: 'refusal', choice: this.index, text: part.refusal });
      }
    }
  }

  private readCall(
    key: number,
    rawId: unknown,
    fn: unknown,
    place: StreamPlace,
    deltas: StreamDelta[],
  ): void {
    const id = nonEmpty(rawId);
    const name = isRecord(fn) ? nonEmpty(fn.name) : undefined;
    const args = isRecord(fn) ? argumentsText(fn.arguments) : '';
    let call = this.calls.get(key);
    if (
      call?.started === true &&
      id !== undefined &&
      name !== undefined &&
      call.upstreamId !== undefined &&
      id !== call.upstreamId
    ) {
      call = undefined;
    }
    if (call === undefined) {
      if (this.callCount >= MAX_TOOL_CALLS_PER_CHOICE) {
        throw badResponse(
          `upstream streamed more than ${MAX_TOOL_CALLS_PER_CHOICE} tool calls in one choice`,
        );
      }
      call = { index: this.callCount, upstreamId: id, name: undefined, pending: '', started: false };
      this.callCount += 1;
      this.calls.set(key, call);
    }
    if (call.started) {
      if (args !== '')
        deltas.push({ type: 'tool_call', choice: this.index, index: call.index, arguments: args });
      return;
    }
    call.upstreamId ??= id;
    call.name ??= name;
    call.pending += args;
    if (call.name === undefined) return;
    call.started = true;
    deltas.push({
      type: 'tool_call',
      choice: this.index,
      index: call.index,
      id:
        call.upstreamId ??
        openaiToolCallId({ ...place, choice: this.index, call: call.index }, call.name, ''),
      name: call.name,
      arguments: call.pending,
    });
    call.pending = '';
  }
}

function nonEmpty(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function argumentsText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined || value === null) return '';
  return JSON.stringify(value);
}

/** Whether a chunk's `logprobs` holds any: OpenAI sends `{content: null, refusal: null}` with none. */
function hasLogprobs(value: unknown): value is Record<string, unknown> {
  return isRecord(value) && Object.values(value).some((entry) => Array.isArray(entry) && entry.length > 0);
}
