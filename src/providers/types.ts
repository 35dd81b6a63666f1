/**
 * Types shared by the provider adapters, the routing layer and the gateway pipeline.
 * Adapters are pure translations: `ChatRequest` → upstream HTTP request, upstream body → `ChatResult`.
 */

export const PROVIDER_NAMES = [
  'prov-deepseek',
  'prov-qwen',
  'prov-kimi',
  'prov-gpt-oss-120b',
  'prov-gemini',
  'prov-llama',
  'prov-mistral',
  'prov-claude',
] as const;

export type ProviderName = (typeof PROVIDER_NAMES)[number];

export function isProviderName(value: string): value is ProviderName {
  return (PROVIDER_NAMES as readonly string[]).includes(value);
}

export type WireFormat = 'openai-compatible' | 'anthropic' | 'gemini';

/** The message roles of OpenAI's Chat Completions (the legacy `function` role arrives as `tool`). */
export type Role = 'system' | 'developer' | 'user' | 'assistant' | 'tool';

/** An image, inline (base64 of its bytes) or by reference (an http(s) URL the gateway never fetches). */
export type ImageSource = { kind: 'data'; mediaType: string; data: string } | { kind: 'url'; url: string };

/**
 * One part of a user message that is not text alone. Text-only content is always a plain string: parts
 * appear only when a message carries an image, audio or a file.
 *
 * @see https://platform.openai.com/docs/api-reference/chat/create#chat-create-messages
 */
export type ContentPart =
  | { type: 'text'; text: string }
  | { type: 'image'; image: ImageSource; detail: 'auto' | 'low' | 'high' | undefined }
  /** `input_audio`: base64 of the audio bytes; `format` as OpenAI names it (`wav`, `mp3`). */
  | { type: 'audio'; data: string; format: string }
  /**
   * `file`: inline (`data` is base64, `mediaType` read off its data URL) or an upstream file id (which only
   * an OpenAI-compatible upstream can resolve).
   */
  | {
      type: 'file';
      data: string | undefined;
      mediaType: string | undefined;
      fileId: string | undefined;
      filename: string | undefined;
    };

/** A function call the assistant made. `arguments` is the JSON text exactly as the model wrote it. */
export interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

/**
 * A conversation message, normalised: text-only content is a string (parts joined with newlines),
 * `content: null` survives only on an assistant message that made tool calls.
 */
export type ChatMessage =
  | { role: 'system' | 'developer'; content: string; name?: string }
  | { role: 'user'; content: string | ContentPart[]; name?: string }
  | { role: 'assistant'; content: string | null; toolCalls?: ToolCall[]; refusal?: string; name?: string }
  /** A tool's result, paired with its call by `toolCallId`; `name` is the function's name (from the call). */
  | { role: 'tool'; toolCallId: string; name: string; content: string };

/** A function the model may call. `parameters` is a JSON Schema object. */
export interface ToolDefinition {
  name: string;
  description?: string;
  parameters?: Record<string, unknown>;
  strict?: boolean;
}

export type ToolChoice =
  | { type: 'auto' }
  | { type: 'none' }
  | { type: 'required' }
  | { type: 'function'; name: string };

export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | {
      type: 'json_schema';
      name: string;
      description?: string;
      schema?: Record<string, unknown>;
      strict?: boolean;
    };

export type ReasoningEffort = 'none' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh';

/** Sampling controls: a format that lacks one leaves it out and names it in `UpstreamHttpRequest.dropped`. */
export interface SamplingParams {
  temperature?: number;
  top_p?: number;
  stop?: string[];
  presence_penalty?: number;
  frequency_penalty?: number;
  seed?: number;
  user?: string;
  logit_bias?: Record<string, number>;
}

/**
 * OpenAI request fields with no translation: an OpenAI-compatible upstream gets them as they came; the
 * other formats refuse or drop each as `OPENAI_ONLY_FIELDS` says.
 */
export interface OpenAIOnlyFields {
  metadata?: Record<string, string>;
  prediction?: unknown;
  service_tier?: string;
  store?: boolean;
  prompt_cache_key?: string;
  safety_identifier?: string;
  verbosity?: string;
  web_search_options?: unknown;
}

/** What a format without an equivalent does with each `OpenAIOnlyFields` field. */
export const OPENAI_ONLY_FIELDS: Readonly<Record<keyof OpenAIOnlyFields, 'refuse' | 'drop'>> = Object.freeze({
  metadata: 'drop',
  prediction: 'drop',
  service_tier: 'drop',
  store: 'drop',
  prompt_cache_key: 'drop',
  safety_identifier: 'drop',
  verbosity: 'drop',
  // Searching the web changes what the answer is.
  web_search_options: 'refuse',
});

/**
 * An Anthropic Messages request as its client sent it (the Messages door, `POST /api/v1/messages`): an
 * Anthropic upstream gets `body` as it is — `cache_control`, thinking blocks and their signatures,
 * `context_management`, tool definitions — with only `model`, `max_tokens` and `stream` set by Tollgate,
 * and `betas` as its `anthropic-beta` header. Other formats ignore it and read the neutral fields, which
 * carry the same conversation.
 */
export interface AnthropicPassThrough {
  body: Readonly<Record<string, unknown>>;
  betas: readonly string[];
}

/**
 * An Anthropic answer as the upstream wrote it, kept for the Messages door when it passed its request
 * through (`AnthropicPassThrough`): content blocks (thinking with its signature, redacted thinking,
 * tool_use) go back to the client unchanged. Billing still reads the parsed usage.
 */
export interface AnthropicAnswer {
  id: string | undefined;
  content: unknown[];
  stopReason: string | null;
  stopSequence: string | null;
  /** The upstream's `usage` object as it came. */
  usage: Record<string, unknown> | undefined;
}

/** Everything about a call except its completion cap: what an adapter checks before money is held. */
export interface UpstreamCallSpec {
  model: string;
  messages: ChatMessage[];
  params: SamplingParams;
  tools: ToolDefinition[] | undefined;
  toolChoice: ToolChoice | undefined;
  parallelToolCalls: boolean | undefined;
  responseFormat: ResponseFormat | undefined;
  /** Number of choices; 1 unless the caller asked for more. */
  n: number;
  /** Log probabilities of the output tokens; `top` is `top_logprobs` (0–20) when given. */
  logprobs: { top: number | undefined } | undefined;
  reasoningEffort: ReasoningEffort | undefined;
  openai: OpenAIOnlyFields;
  /** The original Messages request, for an Anthropic upstream to receive as sent. */
  anthropic?: AnthropicPassThrough | undefined;
}

/** What the gateway asks one upstream for. `maxTokens` is always set (per choice): it is what the hold covers. */
export interface UpstreamChatRequest extends UpstreamCallSpec {
  maxTokens: number;
}

/** A request setting a wire format cannot honour: the call is refused (400 `unsupported_parameter`). */
export interface Refusal {
  /** The request field, as OpenAI's `error.param` names it (`n`, `logprobs`, `messages[2].content[1]`). */
  param: string;
  /** Why, in a sentence that names the wire format (the gateway adds the provider). */
  message: string;
}

/** OpenAI's finish reasons; every adapter maps its upstream's reasons onto these. */
export type FinishReason = 'stop' | 'length' | 'content_filter' | 'tool_calls';

/** Token usage as the upstream reported it; `undefined` means "not reported", never 0. */
export interface UpstreamUsage {
  promptTokens: number | undefined;
  completionTokens: number | undefined;
  /** Prompt tokens read from the upstream's cache (part of `promptTokens`). */
  cachedPromptTokens?: number | undefined;
  /** Prompt tokens written to the upstream's cache (part of `promptTokens`; Anthropic's cache creation). */
  cacheWritePromptTokens?: number | undefined;
  /** Reasoning (thinking) tokens (part of `completionTokens`: billed as output). */
  reasoningTokens?: number | undefined;
}

/** One choice of an answer. */
export interface ChoiceResult {
  /** What the assistant said; `null` when it said nothing (only tool calls, or nothing at all). */
  text: string | null;
  /** Tool calls, in order; empty when none. */
  toolCalls: ToolCall[];
  /** The model's refusal message, when the upstream reports one apart from the text. */
  refusal?: string;
  finishReason: FinishReason;
  /** OpenAI's `choices[].logprobs` object (`{content: [...]}`), when log probabilities were asked for. */
  logprobs?: Record<string, unknown> | null;
}

/**
 * What an answer generated that the caller does not see: the text of its reasoning (DeepSeek's
 * `reasoning_content`, Claude's thinking, Gemini's thought summaries; one entry per block or choice), and
 * the characters of opaque reasoning (thinking signatures, redacted or encrypted thinking). The upstream
 * bills it as output: it is counted when the upstream reports no usage, or when the answer was cut.
 */
export interface ReasoningOutput {
  texts: string[];
  opaqueChars: number;
}

export interface ChatResult {
  /** At least one. */
  choices: ChoiceResult[];
  usage: UpstreamUsage;
  /** The model name the upstream says served the call, when it says one. */
  model: string | undefined;
  /** Reasoning the answer carried apart from its choices; absent when it carried none. */
  reasoning?: ReasoningOutput | undefined;
  /** The Anthropic answer as written, when the request was passed through (`AnthropicPassThrough`). */
  anthropic?: AnthropicAnswer | undefined;
}

/** A fully built upstream HTTP request (always a JSON POST). */
export interface UpstreamHttpRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  /**
   * Request fields the wire format cannot express and that do not change what the answer is (sampling
   * knobs such as `seed` for Anthropic), named as OpenAI names them. Adapters never drop a setting
   * silently: the caller sees these in `x-tollgate-dropped-params`. Absent or empty: nothing was dropped.
   */
  dropped?: string[];
}

/** The raw upstream answer as the HTTP client returns it. */
export interface UpstreamHttpResponse {
  status: number;
  headers: Record<string, string | undefined>;
  bodyText: string;
}

/** Resolved configuration of one provider, as the adapters and the router use it. */
export interface ProviderConfig {
  name: ProviderName;
  wireFormat: WireFormat;
  baseUrl: string;
  /** Upstream credential; `undefined` means the provider is not configured (and so inactive). */
  apiKey: string | undefined;
  model: string;
  /** Nanodollars per 1,000,000 input tokens. */
  inputPriceNano: number;
  /** Nanodollars per 1,000,000 output tokens. */
  outputPriceNano: number;
  /** Nanodollars per 1,000,000 prompt tokens read from the upstream's cache. */
  cacheReadPriceNano: number;
  /** Nanodollars per 1,000,000 prompt tokens written to the upstream's cache. */
  cacheWritePriceNano: number;
  /** Completion cap used when the caller does not send `max_tokens`. */
  defaultMaxTokens: number;
  enabled: boolean;
  /** Deadline of one upstream call (connect, request, whole answer). */
  timeoutMs: number;
  /** Time allowed to open the connection to the upstream. */
  connectTimeoutMs: number;
  /** Streamed calls: time allowed from the request to the upstream's first event. */
  firstByteTimeoutMs: number;
  /** Streamed calls: longest silence allowed between two of the upstream's events. */
  streamIdleTimeoutMs: number;
  inAutoRotation: boolean;
  /** Upper bound of the prompt tokens one image costs on this provider (holds count images by it). */
  imageTokens: number;
}

export type UpstreamFailureKind =
  | 'connect' // could not connect / connection reset before a response
  | 'timeout' // deadline passed
  | 'rate_limited' // upstream 429
  | 'server_error' // upstream 5xx
  | 'auth' // upstream 401/403: the operator's credential is wrong
  | 'rejected' // upstream 4xx: the request itself was refused (e.g. context too long)
  | 'bad_response'; // 2xx whose body is not a readable completion

/** An upstream call that did not produce a completion. Thrown by adapters and the HTTP client. */
export class UpstreamError extends Error {
  readonly kind: UpstreamFailureKind;
  readonly status: number | undefined;
  readonly retryable: boolean;
  readonly retryAfterMs: number | undefined;

  constructor(
    kind: UpstreamFailureKind,
    message: string,
    options: { status?: number; retryAfterMs?: number; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'UpstreamError';
    this.kind = kind;
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
    this.retryable =
      kind === 'connect' ||
      kind === 'timeout' ||
      kind === 'rate_limited' ||
      kind === 'server_error' ||
      kind === 'bad_response';
  }
}

/**
 * One piece of a streamed answer, in OpenAI's terms, read off any wire format's stream. `choice` is the
 * choice's index. A tool call's first piece carries its `id` and `name`; later pieces only more of its
 * `arguments` text (which may be empty in the first piece).
 */
export type StreamDelta =
  | { type: 'text'; choice: number; text: string }
  | { type: 'refusal'; choice: number; text: string }
  | { type: 'tool_call'; choice: number; index: number; id?: string; name?: string; arguments: string }
  /** OpenAI's `choices[].logprobs` of this piece (`{content: [...]}`). */
  | { type: 'logprobs'; choice: number; logprobs: Record<string, unknown> }
  | { type: 'finish'; choice: number; reason: FinishReason }
  /**
   * One upstream event as it came (`name`, `data`), for a door that relays its own wire format unchanged
   * (an Anthropic request passed through); every other reader ignores it.
   */
  | { type: 'event'; choice: number; name: string; data: string };

/**
 * Reads one upstream's server-sent events, one event at a time, in order. Stateful: one per call.
 * Throws `UpstreamError` on an event that reports an error (kind by the error's type) or that cannot be
 * read (`bad_response`).
 */
export interface StreamParser {
  /** One SSE event: its `data` text and its `event` name, if it had one. Returns the deltas it carries. */
  event(data: string, name: string | undefined): StreamDelta[];
  /** Usage as reported so far; a field the upstream has not reported is `undefined`, never 0. */
  usage(): UpstreamUsage;
  /** The reasoning the stream has carried so far (none sent to the caller), or undefined for none. */
  reasoning(): ReasoningOutput | undefined;
  /** The model the upstream says serves the call, once it has said. */
  model(): string | undefined;
  /** Whether the upstream has signalled the normal end of its answer (a later cut loses nothing). */
  done(): boolean;
}

/** One wire format: pure functions, no I/O. */
export interface ProviderAdapter {
  readonly wireFormat: WireFormat;
  /**
   * The first setting of the call this format cannot honour (it would change what the answer is), or
   * `undefined`. Called before any money is held: a refused call reaches no upstream and costs nothing.
   */
  refusal(provider: ProviderConfig, spec: UpstreamCallSpec): Refusal | undefined;
  /**
   * Builds the upstream request of a call `refusal` accepted; with `stream`, the request for the
   * format's server-sent events (asking for usage in the stream wherever the format has to be asked).
   */
  buildRequest(
    provider: ProviderConfig,
    request: UpstreamChatRequest,
    options?: { stream?: boolean },
  ): UpstreamHttpRequest;
  /** A reader of the events of a streamed answer to `request` (the 2xx case; errors go to parseResponse). */
  streamParser(provider: ProviderConfig, request: UpstreamChatRequest): StreamParser;
  /**
   * Reads an upstream answer to `request`. Returns the completion for a usable 2xx answer; throws
   * `UpstreamError` (kind by status: 429 → rate_limited, 5xx → server_error, 401/403 → auth, other 4xx →
   * rejected, unreadable 2xx → bad_response) otherwise.
   */
  parseResponse(
    provider: ProviderConfig,
    response: UpstreamHttpResponse,
    request: UpstreamChatRequest,
  ): ChatResult;
  /**
   * The request asking the upstream for its own prompt count of the call, where the format has one and
   * can be asked for this call; else undefined (the gateway then estimates).
   */
  buildCountRequest?(provider: ProviderConfig, request: UpstreamCallSpec): UpstreamHttpRequest | undefined;
  /** The count of an answer to `buildCountRequest`; throws `UpstreamError` when it has none. */
  parseCount?(provider: ProviderConfig, response: UpstreamHttpResponse): number;
}
