import type { ChatResult, ProviderConfig, UpstreamCallSpec } from '../providers/types.js';
import { UpstreamError } from '../providers/types.js';
import type { GatewayDeps } from './deps.js';
import type { ChatRequest } from './types.js';

/** Usage an upstream may report before we call it absurd (beyond any plausible template overhead). */
function promptTokensPlausible(reported: number, bound: number): boolean {
  return reported <= bound * 2 + 1024;
}

/** The call as one upstream is asked for it (its cap is added once the hold is known). */
export function callSpec(req: ChatRequest, provider: ProviderConfig): UpstreamCallSpec {
  return {
    model: provider.model,
    messages: req.messages,
    params: req.params,
    tools: req.tools,
    toolChoice: req.toolChoice,
    parallelToolCalls: req.parallelToolCalls,
    responseFormat: req.responseFormat,
    n: req.n,
    logprobs: req.logprobs,
    reasoningEffort: req.reasoningEffort,
    openai: req.openai,
    anthropic: req.anthropic,
  };
}

/**
 * An upstream that reports more completion tokens than the cap it was sent is answering garbage: what is
 * wrong with its usage, or undefined.
 */
export function usageProblem(result: ChatResult, cap: number): string | undefined {
  const { completionTokens } = result.usage;
  if (completionTokens !== undefined && completionTokens > cap) {
    return `upstream reported ${completionTokens} completion tokens above the cap ${cap}`;
  }
  return undefined;
}

/**
 * Whether an upstream reports a prompt far beyond what the request could contain (`promptBound`, the
 * hold's count). It did read the prompt and bills what it reports, so the call is served and charged all
 * the same — never a failure at $0 for work done — but at most what was held (docs/api.md, "Billing").
 */
export function promptBeyondBound(result: ChatResult, promptBound: number): boolean {
  const { promptTokens } = result.usage;
  return promptTokens !== undefined && !promptTokensPlausible(promptTokens, promptBound);
}

/**
 * Tells the metrics, the circuit breaker and the log about an upstream attempt that failed, and narrows
 * the error: an `UpstreamError` is returned for the caller to fail over on; anything else (an error of the
 * gateway's own) is thrown on.
 */
export function noteFailedAttempt(
  deps: Pick<GatewayDeps, 'registry' | 'logger' | 'observer'>,
  provider: ProviderConfig,
  err: unknown,
  started: number,
  stream: boolean,
): asserts err is UpstreamError {
  const { registry, logger, observer } = deps;
  observer?.upstreamAttempt(
    provider.name,
    err instanceof UpstreamError ? err.kind : 'internal_error',
    (performance.now() - started) / 1000,
  );
  if (!(err instanceof UpstreamError)) {
    registry.health.releaseProbe(provider.name);
    throw err;
  }
  if (err.retryable || err.kind === 'auth') {
    registry.health.recordFailure(
      provider.name,
      err.kind === 'rate_limited' && err.retryAfterMs !== undefined ? { retryAfterMs: err.retryAfterMs } : {},
    );
  } else registry.health.releaseProbe(provider.name);
  logger.warn(
    { provider: provider.name, kind: err.kind, status: err.status, retryable: err.retryable, stream },
    'upstream call failed',
  );
}
