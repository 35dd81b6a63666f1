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

export type Role = 'system' | 'user' | 'assistant';

export interface ChatMessage {
  role: Role;
  content: string;
}

/** Sampling controls passed through to the upstream, translated per wire format. */
export interface SamplingParams {
  temperature?: number;
  top_p?: number;
  stop?: string[];
  presence_penalty?: number;
  frequency_penalty?: number;
  seed?: number;
  user?: string;
}

/** What the gateway asks one upstream for. `maxTokens` is always set: it is what the hold covers. */
export interface UpstreamChatRequest {
  model: string;
  messages: ChatMessage[];
  maxTokens: number;
  params: SamplingParams;
}

/** OpenAI's finish reasons; every adapter maps its upstream's reasons onto these. */
export type FinishReason = 'stop' | 'length' | 'content_filter' | 'tool_calls';

/** Token usage as the upstream reported it; `undefined` means "not reported", never 0. */
export interface UpstreamUsage {
  promptTokens: number | undefined;
  completionTokens: number | undefined;
}

export interface ChatResult {
  text: string;
  finishReason: FinishReason;
  usage: UpstreamUsage;
  /** The model name the upstream says served the call, when it says one. */
  model: string | undefined;
}

/** A fully built upstream HTTP request (always a JSON POST). */
export interface UpstreamHttpRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  /**
   * Request settings the wire format cannot express (e.g. `seed` for Anthropic). Adapters never drop a
   * setting silently: they leave it out of the body and say so here. Absent or empty: nothing was dropped.
   */
  warnings?: string[];
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
  /** Completion cap used when the caller does not send `max_tokens`. */
  defaultMaxTokens: number;
  enabled: boolean;
  /** Deadline of one upstream call (connect, request, whole answer). */
  timeoutMs: number;
  /** Time allowed to open the connection to the upstream. */
  connectTimeoutMs: number;
  inAutoRotation: boolean;
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

/** One wire format: pure functions, no I/O. */
export interface ProviderAdapter {
  readonly wireFormat: WireFormat;
  buildRequest(provider: ProviderConfig, request: UpstreamChatRequest): UpstreamHttpRequest;
  /**
   * Reads an upstream answer. Returns the completion for a usable 2xx answer; throws `UpstreamError`
   * (kind by status: 429 → rate_limited, 5xx → server_error, 401/403 → auth, other 4xx → rejected,
   * unreadable 2xx → bad_response) otherwise.
   */
  parseResponse(provider: ProviderConfig, response: UpstreamHttpResponse): ChatResult;
}
