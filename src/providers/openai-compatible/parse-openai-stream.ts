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
import { convertOpenAIUsage } from './convert-openai-usage.js';
import { openaiErrorReader } from './openai-error.js';
import { OpenAIStreamChoice } from './openai-stream-choice.js';
import { readOpenAIReasoning } from './read-openai-reasoning.js';

/**
 * Reads an OpenAI-compatible stream (`stream: true`): each event's data is a `chat.completion.chunk`,
 * whose `choices[]` elements (told apart by `index`) become deltas through `OpenAIStreamChoice`; `usage`
 * (sent, as asked with `stream_options.include_usage`, in a last chunk whose `choices` is empty; `null` in
 * the others; Groq's `x_groq.usage` where `usage` is absent) is read by `convertOpenAIUsage`, the latest
 * kept; `model` names the model. `data: [DONE]` ends the stream, and anything after it is ignored. The
 * reasoning in a choice's delta (`readOpenAIReasoning`) is not sent on but kept (`reasoning()`): the
 * upstream generated it, and it is counted when the upstream reports no usage or the stream is cut.
 *
 * A chunk with an `error` (some hosts report a failure mid-stream that way), or an event named `error`, is
 * thrown as `streamedFailure`. An event that is not a JSON object cannot be read (`bad_response`).
 *
 * The answer is complete (`done`) once `[DONE]` came, or once every choice has its finish reason and the
 * usage has come (a host that sends no `[DONE]` has then said all it will).
 *
 * @see https://platform.openai.com/docs/api-reference/chat-streaming/streaming
 * @see https://platform.openai.com/docs/api-reference/chat/create#chat-create-stream_options
 * @see https://console.groq.com/docs/api-reference#chat-create
 */
export function createOpenAIStreamParser(
  provider: ProviderConfig,
  request: UpstreamChatRequest,
): StreamParser {
  return new OpenAIStreamParser(provider.apiKey, request.messages.length, request.n);
}

class OpenAIStreamParser implements StreamParser {
  private ended = false;
  private reported: UpstreamUsage = { promptTokens: undefined, completionTokens: undefined };
  private usageCame = false;
  private modelName: string | undefined;
  private responseId: string | undefined;
  private readonly choices = new Map<number, OpenAIStreamChoice>();
  private readonly thought = new ReasoningTally();

  constructor(
    private readonly secret: string | undefined,
    private readonly turn: number,
    /** Choices asked for: a choice numbered beyond them is the upstream's fault. */
    private readonly n: number,
  ) {}

  event(data: string, name: string | undefined): StreamDelta[] {
    // Blank data is a keep-alive (some proxies send one): it says nothing.
    if (this.ended || data.trim() === '') return [];
    if (data.startsWith('[DONE]')) {
      this.ended = true;
      return [];
    }
    if (name === 'error') throw streamedFailure(errorEventBody(data), openaiErrorReader, this.secret);
    const chunk = parseEventObject(data);
    if (chunk.error !== undefined && chunk.error !== null) {
      throw streamedFailure(chunk, openaiErrorReader, this.secret);
    }
    if (typeof chunk.model === 'string' && chunk.model !== '') this.modelName = chunk.model;
    if (this.responseId === undefined && typeof chunk.id === 'string' && chunk.id !== '') {
      this.responseId = chunk.id;
    }
    // Groq has reported a stream's usage under `x_groq.usage` in its last chunk; `usage` wins when both come.
    const usage = chunk.usage ?? (isRecord(chunk.x_groq) ? chunk.x_groq.usage : undefined);
    if (usage !== undefined && usage !== null) {
      this.reported = convertOpenAIUsage(usage);
      this.usageCame = true;
    }
    const deltas: StreamDelta[] = [];
    const { choices } = chunk;
    if (choices === undefined || choices === null) return deltas;
    if (!Array.isArray(choices)) throw badResponse('upstream stream chunk choices is not a list');
    const place = { responseId: this.responseId, turn: this.turn };
    for (const [position, choice] of (choices as unknown[]).entries()) {
      if (!isRecord(choice)) throw badResponse('upstream stream chunk choice is not an object');
      const index = indexWithin(choice.index, position, this.n, 'choice');
      let state = this.choices.get(index);
      if (state === undefined) {
        state = new OpenAIStreamChoice(index);
        this.choices.set(index, state);
      }
      state.read(choice, place, deltas);
      readOpenAIReasoning(choice.delta, index, this.thought);
    }
    return deltas;
  }

  usage(): UpstreamUsage {
    return this.reported;
  }

  reasoning(): ReasoningOutput | undefined {
    return this.thought.output();
  }

  model(): string | undefined {
    return this.modelName;
  }

  done(): boolean {
    if (this.ended) return true;
    if (!this.usageCame || this.choices.size === 0) return false;
    for (const choice of this.choices.values()) if (!choice.finished) return false;
    return true;
  }
}
