import { SseDecoder, type SseEvent } from '../../src/providers/sse-decoder.js';
import type { FinishReason, StreamDelta, StreamParser, ToolCall } from '../../src/providers/types.js';
import { fixture } from './provider-test-helpers.js';

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
