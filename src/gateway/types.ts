import type { ChoiceResult, ProviderName, UpstreamCallSpec } from '../providers/types.js';

/** A validated chat-completion request, HTTP-free: the call to make, and how the caller asked for it. */
export interface ChatRequest extends Omit<UpstreamCallSpec, 'model'> {
  model: string | undefined;
  provider: string | undefined;
  /** The caller's completion cap (`max_completion_tokens`, else `max_tokens`), per choice. */
  maxTokens: number | undefined;
  /** The caller used the legacy `functions` / `function_call` fields: answer with `message.function_call`. */
  legacyFunctions: boolean;
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
  /** Prompt tokens the upstream served from its cache, when it said. */
  cachedPromptTokens: number | undefined;
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
