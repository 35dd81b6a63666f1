import { SseDecoder, type SseEvent } from '../../src/providers/sse-decoder.js';
import type {
  ChatResult,
  FinishReason,
  ProviderAdapter,
  ProviderConfig,
  StreamDelta,
  StreamParser,
  ToolCall,
  UpstreamChatRequest,
  UpstreamError,
} from '../../src/providers/types.js';
import { catchError, chatRequest, fixture, httpResponse } from './provider-test-helpers.js';

/** The events of a recorded SSE transcript from `__fixtures__/`, decoded as the client decodes them. */
export function fixtureEvents(name: string): SseEvent[] {
  const decoder = new SseDecoder({ maxEventBytes: 1024 * 1024 });
  const events = decoder.push(Buffer.from(fixture(name), 'utf8'));
  decoder.end();
  return events;
}

/** Feeds `events` to `parser` in order and returns every delta. */
export function feed(parser: StreamParser, events: readonly SseEvent[]): StreamDelta[] {
  return events.flatMap((event) => parser.event(event.data, event.name));
}

/** One choice put together from its deltas, as the gateway would. */
export interface AssembledChoice {
  text: string;
  refusal: string;
  toolCalls: ToolCall[];
  finish: FinishReason | undefined;
  logprobs: Record<string, unknown>[];
}

/** Puts the deltas together per choice: text and refusal concatenated, each tool call's pieces joined. */
export function assemble(deltas: readonly StreamDelta[]): Map<number, AssembledChoice> {
  const choices = new Map<number, AssembledChoice>();
  for (const delta of deltas) {
    let choice = choices.get(delta.choice);
    if (choice === undefined) {
      choice = { text: '', refusal: '', toolCalls: [], finish: undefined, logprobs: [] };
      choices.set(delta.choice, choice);
    }
    switch (delta.type) {
      case 'text':
        choice.text += delta.text;
        break;
      case 'refusal':
        choice.refusal += delta.text;
        break;
      case 'tool_call': {
        const call = choice.toolCalls[delta.index];
        if (call === undefined) {
          if (delta.id === undefined || delta.name === undefined) {
            throw new Error(`tool call ${delta.index} began without its id and name`);
          }
          if (delta.index !== choice.toolCalls.length) throw new Error('tool calls out of order');
          choice.toolCalls.push({ id: delta.id, name: delta.name, arguments: delta.arguments });
        } else {
          if (delta.id !== undefined || delta.name !== undefined) {
            throw new Error(`tool call ${delta.index} got its id or name twice`);
          }
          call.arguments += delta.arguments;
        }
        break;
      }
      case 'logprobs':
        choice.logprobs.push(delta.logprobs);
        break;
      case 'finish':
        if (choice.finish !== undefined) throw new Error(`choice ${delta.choice} finished twice`);
        choice.finish = delta.reason;
        break;
    }
  }
  return choices;
}

/** The one choice of an answer of one choice. */
export function onlyChoice(deltas: readonly StreamDelta[]): AssembledChoice {
  const choices = assemble(deltas);
  const choice = choices.get(0);
  if (choices.size !== 1 || choice === undefined) throw new Error(`expected one choice, got ${choices.size}`);
  return choice;
}

/** An SSE event of `data` (JSON-encoded unless text), with an optional event name. */
export function sse(data: unknown, name?: string): SseEvent {
  return { name, data: typeof data === 'string' ? data : JSON.stringify(data) };
}

/** A recorded stream fed whole to a fresh parser: the parser after it, every delta, and its one choice. */
export interface PlayedStream {
  stream: StreamParser;
  deltas: StreamDelta[];
  choice: AssembledChoice;
}

/**
 * The stream parser of one adapter on one provider, and the scaffold its tests share. Every method starts
 * a fresh parser for the plain chat request (`chatRequest()`) unless given another request.
 */
export interface StreamHarness {
  /** A fresh parser of the answer to `request`. */
  parser(request?: UpstreamChatRequest): StreamParser;
  /** The deltas a fresh parser gives for `events`. */
  deltasOf(events: readonly SseEvent[], request?: UpstreamChatRequest): StreamDelta[];
  /** The one choice a fresh parser puts together from `events`. */
  choiceOf(events: readonly SseEvent[], request?: UpstreamChatRequest): AssembledChoice;
  /** The `UpstreamError` a fresh parser throws on `events`. */
  errorOf(events: readonly SseEvent[], request?: UpstreamChatRequest): UpstreamError;
  /** What the adapter makes of the 200 answer `body` (a JSON value or its text) not streamed. */
  answer(body: unknown, request?: UpstreamChatRequest): ChatResult;
  /** The recorded stream `transcript` (a file of `__fixtures__/`) fed whole to a fresh parser. */
  play(transcript: string, request?: UpstreamChatRequest): PlayedStream;
  /**
   * The recorded stream `transcript` beside the recorded answer not streamed of the same call
   * (`answerFixture`), both for the plain chat request.
   */
  playAgainstAnswer(transcript: string, answerFixture: string): PlayedStream & { unstreamed: ChatResult };
  /**
   * A recorded stream whose last event reports an error, on one parser: the text of the events before it,
   * and the error the last one throws.
   */
  midStreamError(transcript: string): { textBefore: string; error: UpstreamError };
}

export function streamHarness(adapter: ProviderAdapter, provider: ProviderConfig): StreamHarness {
  const parser = (request: UpstreamChatRequest = chatRequest()) => adapter.streamParser(provider, request);
  const answer = (body: unknown, request: UpstreamChatRequest = chatRequest()) =>
    adapter.parseResponse(provider, httpResponse(200, body), request);
  const play = (transcript: string, request?: UpstreamChatRequest): PlayedStream => {
    const stream = parser(request);
    const deltas = feed(stream, fixtureEvents(transcript));
    return { stream, deltas, choice: onlyChoice(deltas) };
  };
  return {
    parser,
    deltasOf: (events, request) => feed(parser(request), events),
    choiceOf: (events, request) => onlyChoice(feed(parser(request), events)),
    errorOf: (events, request) => catchError(() => feed(parser(request), events)),
    answer,
    play,
    playAgainstAnswer: (transcript, answerFixture) => ({
      ...play(transcript),
      unstreamed: answer(fixture(answerFixture)),
    }),
    midStreamError(transcript) {
      const stream = parser();
      const events = fixtureEvents(transcript);
      const textBefore = onlyChoice(feed(stream, events.slice(0, -1))).text;
      return { textBefore, error: catchError(() => feed(stream, events.slice(-1))) };
    },
  };
}
