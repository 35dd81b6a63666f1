import type { GatewayError } from '../errors.js';
import type {
  AnthropicAnswer,
  ChoiceResult,
  ProviderName,
  StreamDelta,
  UpstreamCallSpec,
} from '../providers/types.js';

/** A validated chat-completion request, HTTP-free: the call to make, and how the caller asked for it. */
export interface ChatRequest extends Omit<UpstreamCallSpec, 'model'> {
  model: string | undefined;
  provider: string | undefined;
  /** The caller's completion cap (`max_completion_tokens`, else `max_tokens`), per choice. */
  maxTokens: number | undefined;
  /**
   * Set when the caller's `maxTokens` is a ceiling the gateway may lower to what the balance can hold
   * (the Messages door, whose `max_tokens` is required): the lowest cap worth sending. Unset, an explicit
   * cap the balance cannot cover is a 402.
   */
  maxTokensFloor?: number;
  /**
   * Bytes of prompt content the neutral messages do not carry but the upstream reads (thinking blocks of
   * a request passed through as sent): counted into the hold's prompt bound.
   */
  uncarriedPromptBytes?: number;
  /** The caller used the legacy `functions` / `function_call` fields: answer with `message.function_call`. */
  legacyFunctions: boolean;
  /**
   * `stream: true` (accepted only with STREAMING=on): the answer goes out as server-sent events;
   * `includeUsage` is the caller's `stream_options.include_usage` (the bill is sent either way).
   */
  stream?: { includeUsage: boolean };
}

/** Everything the API layer needs to shape the `chat.completion` body. */
export interface ChatCompletion {
  id: string;
  /** Unix seconds. */
  created: number;
  model: string;
  provider: ProviderName;
  /** At least one. */
  choices: ChoiceResult[];
  promptTokens: number;
  completionTokens: number;
  /** Prompt tokens the upstream served from its cache (part of `promptTokens`), when it said. */
  cachedPromptTokens: number | undefined;
  /** Prompt tokens the upstream wrote to its cache (part of `promptTokens`), when it said. */
  cacheWritePromptTokens?: number | undefined;
  /** Reasoning tokens (billed as output, part of `completionTokens`), when the upstream said. */
  reasoningTokens: number | undefined;
  usageEstimated: boolean;
  /** Request fields the wire format could not express and left out (`x-tollgate-dropped-params`). */
  droppedParams: string[];
  /** Answer in the legacy `function_call` shape. */
  legacyFunctions: boolean;
  /** Log probabilities were asked for: every choice carries `logprobs` (null when none came). */
  logprobs: boolean;
  inputCostNano: number;
  outputCostNano: number;
  /** Available balance after the settle. */
  balanceNano: number;
  durationMs: number;
  /** True when this is the stored answer of an earlier request with the same idempotency key. */
  replayed?: boolean;
  /** The Anthropic answer as written, when a Messages request was passed through to an Anthropic upstream. */
  anthropic?: AnthropicAnswer;
  /**
   * A streamed answer that ended before it was complete: how, and the error its client was sent, if any.
   * Stored with the answer, so that an idempotent replay ends the same way.
   */
  incomplete?: { ending: 'client_gone' | 'upstream_cut'; code: string | null; message: string | undefined };
}

/** Facts about the request the pipeline needs from its caller. */
export interface RequestContext {
  requestId: string;
  accountId: string;
  keyId: string;
  /** The key's allow-list of provider and model names; undefined or null: every one. */
  keyAllowed?: readonly string[] | null;
  /** Epoch ms when the request arrived. */
  startedAt: number;
  /** Whether the client has disconnected (checked when the usage row is written). */
  clientGone: () => boolean;
  /** Told the prompt and completion tokens of the settled call (its key's tokens-per-minute count). */
  tokensSettled?: ((tokens: number) => void) | undefined;
  /** The request asked for a stream (its deadline is STREAM_TIMEOUT_MS, not REQUEST_TIMEOUT_MS). */
  stream?: boolean;
  /** The caller's `Idempotency-Key` and a hash of the request body, when the header was sent. */
  idempotency?: { key: string; bodyHash: string };
  /**
   * Written by the pipeline once it has routed: the provider chosen, then the one that served or last
   * failed. Unset when the request was refused before routing. Read by the HTTP layer for metrics.
   */
  provider?: ProviderName;
  /** Where the pipeline adds the time it waited on upstreams (the `x-tollgate-overhead-ms` header). */
  upstreamWait?: UpstreamWait;
}

/** Milliseconds a request waited on upstreams, added by the pipeline per attempt. */
export interface UpstreamWait {
  upstreamMs: number;
}

/** What a streamed call needs from the HTTP layer: where its deltas go, and word of the client leaving. */
export interface StreamSink {
  /**
   * The answer begins: the response's headers go out. Called once, when an upstream has produced its
   * first delta; before it, a failure is an ordinary error answer (and auto routing may fail over).
   */
  begin(start: StreamStart): void;
  /** Sends the deltas of one upstream event; a promise when the client must catch up first. */
  send(deltas: readonly StreamDelta[]): Promise<void> | undefined;
  /** Whether the client has gone (its connection closed before the answer ended). */
  readonly clientGone: boolean;
  /** Called once, as soon as the client has gone. */
  onClientGone(listener: () => void): void;
}

export interface StreamStart {
  /** The completion id and creation time, when they are not this request's own (a replay). */
  id?: string;
  created?: number;
  provider: ProviderName;
  model: string;
  /** Request fields the upstream's wire format left out (`x-tollgate-dropped-params`). */
  droppedParams: string[];
  /** The stored answer of an earlier request with the same idempotency key, replayed. */
  replayed?: boolean;
}

/** How a streamed answer ended. */
export type StreamEnding = 'completed' | 'client_gone' | 'upstream_cut';

export interface StreamOutcome {
  /** The call as billed (for the final chunk's `usage` and `meta`). */
  completion: ChatCompletion;
  ending: StreamEnding;
  /** Why the upstream's stream ended early (`upstream_cut`): sent to the client as an error event. */
  error?: GatewayError;
}
