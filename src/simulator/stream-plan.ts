/**
 * A streamed answer as its format writes it, cut into what the writer paces: the events sent at once
 * (`head`), the content steps (each one piece, or with `n` > 1 one piece per choice, plus the framing
 * events before it), and the ending events (`tail`). Frames are the wire text, already encoded.
 */
import type { Answer } from './answer.js';
import type { Conversation, IncomingCall, Rejection, Usage } from './formats/shared.js';

export interface StreamPlan {
  head: string[];
  steps: string[][];
  tail: string[];
}

/** How a request asked to be streamed. */
export interface StreamAsk {
  /** OpenAI `stream_options.include_usage`: a usage chunk before `[DONE]`, `usage: null` on the others. */
  includeUsage: boolean;
  /** Gemini without `alt=sse`: one JSON array, written element by element. */
  jsonArray: boolean;
}

export interface PlanInput {
  slug: string;
  conv: Conversation;
  answer: Answer;
  usage: Usage | null;
  ask: StreamAsk;
  /** Pieces each streamed string is split into. */
  pieces: number;
  /** The `no_choices` fault: a stream without any choice / block / candidate. */
  noChoices: boolean;
}

/** One format's streaming: how a stream is asked for, written and broken off with an error. */
export interface FormatStreamer {
  /** Whether the request asks for a stream, valid or not (what the record of requests says). */
  requested(call: IncomingCall): boolean;
  /** How the request asks for a stream; null when it does not; a rejection when its stream fields are invalid. */
  asked(call: IncomingCall): StreamAsk | null | Rejection;
  contentType(ask: StreamAsk): string;
  plan(input: PlanInput): StreamPlan;
  /** What ends a stream with an error after `sent` content steps (the `stream_error` fault). */
  errorFrame(ask: StreamAsk, sent: number, status: number | undefined, message: string | undefined): string;
}

/** Collects a plan: framing events wait for the next piece, so that a piece comes with its context. */
export class PlanBuilder {
  private readonly head: string[] = [];
  private readonly steps: string[][] = [];
  private pending: string[] = [];

  /** A framing event, sent with the next piece (or with the ending). */
  event(frame: string): void {
    this.pending.push(frame);
  }

  /** The framing events so far go out as soon as the stream starts. */
  startNow(): void {
    this.head.push(...this.pending);
    this.pending = [];
  }

  /** One content step: the pending framing events, then these frames (one per choice). */
  piece(...frames: string[]): void {
    this.steps.push([...this.pending, ...frames]);
    this.pending = [];
  }

  finish(...ending: string[]): StreamPlan {
    const plan = { head: this.head, steps: this.steps, tail: [...this.pending, ...ending] };
    this.pending = [];
    return plan;
  }
}

/** An SSE event: `event:` line (when named) and one `data:` line. */
export function sse(data: string, event?: string, newline = '\n'): string {
  return `${event === undefined ? '' : `event: ${event}${newline}`}data: ${data}${newline}${newline}`;
}
