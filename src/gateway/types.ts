import type { ChatMessage, FinishReason, ProviderName, SamplingParams } from '../providers/types.js';

/** A validated chat-completion request, HTTP-free. */
export interface ChatRequest {
  messages: ChatMessage[];
  model: string | undefined;
  provider: string | undefined;
  /** The caller's completion cap (`max_completion_tokens`, else `max_tokens`). */
  maxTokens: number | undefined;
  params: SamplingParams;
}

/** Everything the API layer needs to shape the `chat.completion` body. */
export interface ChatCompletion {
  id: string;
  /** Unix seconds. */
  created: number;
  model: string;
  provider: ProviderName;
  text: string;
  finishReason: FinishReason;
  promptTokens: number;
  completionTokens: number;
  usageEstimated: boolean;
  inputCostNano: number;
  outputCostNano: number;
  /** Available balance after the settle. */
  balanceNano: number;
  durationMs: number;
  /** True when this is the stored answer of an earlier request with the same idempotency key. */
  replayed?: boolean;
}

/** Facts about the request the pipeline needs from its caller. */
export interface RequestContext {
  requestId: string;
  accountId: string;
  keyId: string;
  /** Epoch ms when the request arrived. */
  startedAt: number;
  /** Whether the client has disconnected (checked when the usage row is written). */
  clientGone: () => boolean;
  /** The caller's `Idempotency-Key` and a hash of the request body, when the header was sent. */
  idempotency?: { key: string; bodyHash: string };
  /**
   * Written by the pipeline once it has routed: the provider chosen, then the one that served or last
   * failed. Unset when the request was refused before routing. Read by the HTTP layer for metrics.
   */
  provider?: ProviderName;
}
