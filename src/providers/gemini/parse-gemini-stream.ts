import { indexWithin } from '../answer-index.js';
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
import { convertGeminiLogprobs } from './convert-gemini-logprobs.js';
import { convertGeminiUsage } from './convert-gemini-usage.js';
import { geminiErrorReader } from './gemini-error.js';
import { geminiChoiceFinishReason } from './map-gemini-finish-reason.js';
import { readGeminiFunctionCall } from './read-gemini-function-call.js';
import { readGeminiThought } from './read-gemini-thought.js';

/** What the stream has said so far of one candidate. */
interface CandidateState {
  finished: boolean;
  /** How many of its parts came (the position of the next one). */
  parts: number;
  /** How many function calls it made (the index of the next one). */
  calls: number;
}

/**
 * Reads a Gemini `streamGenerateContent?alt=sse` stream: each event's data is a `GenerateContentResponse`
 * holding the next parts of each candidate (`candidates[].index` is the choice, below the `n` asked for;
 * proto3 leaves out 0), read
 * the way `convertGeminiCandidate` reads an answer:
 * - text parts are text, thought summaries (`thought: true`) are not: they and thought signatures are
 *   kept apart (`readGeminiThought`, `reasoning()`), counted when the upstream reports no usage or is cut;
 * - a `functionCall` part is a whole tool call in one delta (`readGeminiFunctionCall`: Gemini's id, or
 *   one generated from the part's position among all the candidate's parts so far), numbered 0, 1, 2… per
 *   candidate;
 * - `finishReason` is the choice's finish (`geminiChoiceFinishReason`: `tool_calls` for a candidate that
 *   made calls and stopped);
 * - `logprobsResult`, when log probabilities were asked for, through `convertGeminiLogprobs`;
 * - a prompt blocked before any candidate (`promptFeedback.blockReason`) finishes every choice asked for
 *   with `content_filter`, as an answer that is not streamed does.
 * `usageMetadata` is cumulative: the latest is kept, read by `convertGeminiUsage`; `modelVersion` names
 * the model. A chunk with an `error` is thrown as `streamedFailure`; an event that is not a JSON object
 * cannot be read (`bad_response`).
 *
 * The answer is complete (`done`) once every candidate that appeared has its finish reason and usage has
 * come (Gemini ends its stream without a closing event).
 *
 * @see https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent
 * @see https://ai.google.dev/api/generate-content#generatecontentresponse
 * @see https://ai.google.dev/gemini-api/docs/text-generation#streaming-responses
 */
export function createGeminiStreamParser(
  provider: ProviderConfig,
  request: UpstreamChatRequest,
): StreamParser {
  return new GeminiStreamParser(provider.apiKey, request);
}

class GeminiStreamParser implements StreamParser {
  private converted: UpstreamUsage = { promptTokens: undefined, completionTokens: undefined };
  private modelName: string | undefined;
  private responseId: string | undefined;
  private readonly candidates = new Map<number, CandidateState>();
  private readonly thought = new ReasoningTally();

  constructor(
    private readonly secret: string | undefined,
    private readonly request: UpstreamChatRequest,
  ) {}

  event(data: string, name: string | undefined): StreamDelta[] {
    if (name === 'error') throw streamedFailure(errorEventBody(data), geminiErrorReader, this.secret);
    // Blank data is a keep-alive (some proxies send one): it says nothing.
    if (data.trim() === '') return [];
    const chunk = parseEventObject(data);
    if (chunk.error !== undefined && chunk.error !== null) {
      throw streamedFailure(chunk, geminiErrorReader, this.secret);
    }
    if (typeof chunk.modelVersion === 'string' && chunk.modelVersion !== '')
      this.modelName = chunk.modelVersion;
    if (this.responseId === undefined && typeof chunk.responseId === 'string' && chunk.responseId !== '') {
      this.responseId = chunk.responseId;
    }
    if (chunk.usageMetadata !== undefined && chunk.usageMetadata !== null) {
      this.converted = convertGeminiUsage(chunk.usageMetadata);
    }
    const deltas: StreamDelta[] = [];
    const candidates = Array.isArray(chunk.candidates) ? (chunk.candidates as unknown[]) : [];
    if (candidates.length === 0) {
      const feedback = chunk.promptFeedback;
      if (isRecord(feedback) && typeof feedback.blockReason === 'string') this.blocked(deltas);
      return deltas;
    }
    for (const [position, candidate] of candidates.entries()) {
      if (!isRecord(candidate)) throw badResponse(`upstream candidates[${position}] is not an object`);
      this.readCandidate(candidate, deltas);
    }
    return deltas;
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
    // Every candidate finished is the answer's end; usage, when the upstream sends it, comes with the
    // last candidate's finish, and an upstream that sends none still answered in full.
    if (this.candidates.size === 0) return false;
    for (const candidate of this.candidates.values()) if (!candidate.finished) return false;
    return true;
  }

  private readCandidate(candidate: Record<string, unknown>, deltas: StreamDelta[]): void {
    const choice = indexWithin(candidate.index, 0, this.request.n, 'candidate');
    const state = this.state(choice);
    const { content } = candidate;
    const parts: unknown[] = isRecord(content) && Array.isArray(content.parts) ? content.parts : [];
    for (const part of parts) {
      const position = state.parts;
      state.parts += 1;
      if (!isRecord(part)) continue;
      readGeminiThought(part, choice, this.thought);
      if (part.functionCall !== undefined) {
        const call = readGeminiFunctionCall(part.functionCall, {
          responseId: this.responseId,
          modelVersion: this.modelName,
          turn: this.request.messages.length,
          candidate: choice,
          part: position,
        });
        deltas.push({ type: 'tool_call', choice, index: state.calls, ...call });
        state.calls += 1;
      } else if (typeof part.text === 'string' && part.thought !== true && part.text !== '') {
        deltas.push({ type: 'text', choice, text: part.text });
      }
    }
    const asked = this.request.logprobs;
    if (asked !== undefined && candidate.logprobsResult !== undefined) {
      const logprobs = convertGeminiLogprobs(candidate.logprobsResult, asked.top);
      if (logprobs !== null) deltas.push({ type: 'logprobs', choice, logprobs });
    }
    const reason = candidate.finishReason;
    if (typeof reason === 'string' && reason !== '' && !state.finished) {
      state.finished = true;
      deltas.push({ type: 'finish', choice, reason: geminiChoiceFinishReason(reason, state.calls > 0) });
    }
  }

  /** A blocked prompt: every choice asked for ends, content-filtered. */
  private blocked(deltas: StreamDelta[]): void {
    for (let choice = 0; choice < Math.max(1, this.request.n); choice += 1) {
      const state = this.state(choice);
      if (state.finished) continue;
      state.finished = true;
      deltas.push({ type: 'finish', choice, reason: 'content_filter' });
    }
  }

  private state(choice: number): CandidateState {
    let state = this.candidates.get(choice);
    if (state === undefined) {
      state = { finished: false, parts: 0, calls: 0 };
      this.candidates.set(choice, state);
    }
    return state;
  }
}
