import type { Logger } from 'pino';
import { type AccountSummary, type Billing, callCost, type Hold } from '../billing/billing.js';
import { capWithinHold, type HoldPlanInput, promptSize, promptTokenBound } from '../billing/estimate.js';
import type { Config } from '../config/index.js';
import { GatewayError } from '../errors.js';
import type {
  ChatResult,
  ProviderAdapter,
  ProviderConfig,
  ProviderName,
  UpstreamCallSpec,
  UpstreamFailureKind,
  UpstreamHttpRequest,
  UpstreamHttpResponse,
  WireFormat,
} from '../providers/types.js';
import { isProviderName, UpstreamError } from '../providers/types.js';
import type { ProviderRegistry, ProviderStatus } from '../routing/registry.js';
import { resolveRoute } from '../routing/resolve-route.js';
import type { RotationCounter } from '../routing/rotation.js';
import type { SettleResult, Store, UsageRecord } from '../store/types.js';
import { countCompletionTokens, countPromptTokens } from './count-tokens.js';
import type { TokenCounter } from './token-counter.js';
import type { ChatCompletion, ChatRequest, RequestContext } from './types.js';
import { toGatewayError } from './upstream-failure.js';

/** The network side of an upstream call (`src/providers/upstream-client.ts`). */
export interface UpstreamSender {
  send(
    req: UpstreamHttpRequest,
    opts: { timeoutMs: number; signal?: AbortSignal },
  ): Promise<UpstreamHttpResponse>;
}

/** How one upstream call ended, for metrics: `ok`, the failure kind, or an error of the gateway's own. */
export type UpstreamOutcome = 'ok' | UpstreamFailureKind | 'internal_error';

/** Optional instrumentation (`src/metrics/`), told each outcome where the pipeline learns it. */
export interface GatewayObserver {
  /** One upstream call ended; every failover attempt is reported on its own. */
  upstreamAttempt(provider: ProviderName, outcome: UpstreamOutcome, seconds: number): void;
  /** A request was settled: the tokens billed and what was charged (meta.cost.total, in nanodollars). */
  charged(provider: ProviderName, promptTokens: number, completionTokens: number, costNano: number): void;
}

/** How long an idempotency key's answer is kept (and a different body refused). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

export interface GatewayDeps {
  config: Config;
  idempotency: Pick<Store, 'beginIdempotent' | 'abandonIdempotent'>;
  billing: Billing;
  registry: ProviderRegistry;
  rotation: RotationCounter;
  upstream: UpstreamSender;
  adapterFor: (format: WireFormat) => ProviderAdapter;
  /** Counts tokens off the event loop for answers without usage. */
  tokenCounter: TokenCounter;
  logger: Logger;
  now?: () => number;
  observer?: GatewayObserver;
}

/** Usage an upstream may report before we call it absurd (beyond any plausible template overhead). */
function promptTokensPlausible(reported: number, bound: number): boolean {
  return reported <= bound * 2 + 1024;
}

interface Served {
  provider: ProviderConfig;
  result: ChatResult;
  cap: number;
  /** Request fields the upstream's wire format left out. */
  dropped: string[];
}

/**
 * The completion pipeline (DESIGN.md "The path of one request"), HTTP-free:
 * route → hold → adapter/upstream (failover under auto routing) → settle, or release on failure.
 */
export class Gateway {
  private readonly now: () => number;

  constructor(private readonly deps: GatewayDeps) {
    this.now = deps.now ?? Date.now;
  }

  /**
   * Serves one request. With an idempotency key, a repeat of an answered request returns the stored
   * answer (no upstream call, no charge); the answer is stored in the settle transaction itself.
   */
  complete(ctx: RequestContext, req: ChatRequest): Promise<ChatCompletion> {
    // Without a key, serve's own promise is returned as it is (an async wrapper would add turns).
    return ctx.idempotency ? this.completeIdempotent(ctx, req, ctx.idempotency) : this.serve(ctx, req);
  }

  private async completeIdempotent(
    ctx: RequestContext,
    req: ChatRequest,
    idem: NonNullable<RequestContext['idempotency']>,
  ): Promise<ChatCompletion> {
    const now = this.now();
    const begun = await this.deps.idempotency.beginIdempotent({
      accountId: ctx.accountId,
      key: idem.key,
      bodyHash: idem.bodyHash,
      requestId: ctx.requestId,
      now,
      lockedUntil: ctx.startedAt + this.deps.config.requestTimeoutMs + this.deps.config.holdGraceMs,
      expiresAt: now + IDEMPOTENCY_TTL_MS,
    });
    switch (begun.kind) {
      case 'replay': {
        const first = JSON.parse(begun.responseJson) as ChatCompletion;
        ctx.provider = first.provider;
        return { ...first, replayed: true };
      }
      case 'in_progress':
        throw new GatewayError(
          'idempotency_in_progress',
          'A request with this Idempotency-Key is still being served; retry shortly to get its answer.',
          { retryAfterSeconds: 1 },
        );
      case 'mismatch':
        throw new GatewayError(
          'idempotency_key_reused',
          'This Idempotency-Key was already used with a different request body; use a new key for a new request.',
          { param: 'Idempotency-Key' },
        );
      case 'started':
        break;
    }
    try {
      return await this.serve(ctx, req);
    } catch (err) {
      // Nothing was charged: free the key so a retry is served afresh.
      await this.deps.idempotency.abandonIdempotent(ctx.accountId, idem.key, ctx.requestId);
      throw err;
    }
  }

  /** Every provider with its model, prices and whether it serves now (`GET /api/v1/models`). */
  providers(): ProviderStatus[] {
    return this.deps.registry.all();
  }

  /** One provider by its model name or provider name, or 404 `model_not_found`. */
  provider(id: string): ProviderStatus {
    const { registry } = this.deps;
    const name = isProviderName(id) ? id : registry.providerForModel(id);
    if (name === undefined) {
      throw new GatewayError('model_not_found', `The model "${id.slice(0, 200)}" does not exist.`, {
        param: 'model',
      });
    }
    return registry.status(name);
  }

  /** Balance and spend of an account (`GET /api/v1/key`). */
  summary(accountId: string): Promise<AccountSummary | undefined> {
    return this.deps.billing.summary(accountId);
  }

  private async serve(ctx: RequestContext, req: ChatRequest): Promise<ChatCompletion> {
    const { config, billing, registry, rotation } = this.deps;
    const routed = resolveRoute({ model: req.model, provider: req.provider }, registry, rotation);
    const route = routed instanceof Promise ? await routed : routed;
    ctx.provider = route.candidates[0]?.name;
    // Before any money is held: a candidate whose wire format cannot honour the request is left out (under
    // auto routing) or refuses it (when chosen by name), with no upstream call and no charge.
    const candidates = this.acceptingCandidates(route.candidates, route.explicit, req);
    ctx.provider = candidates[0]?.name;
    const plan: HoldPlanInput = {
      prompt: promptSize(req),
      requestedMaxTokens: req.maxTokens,
      minCompletionTokens: config.minCompletionTokens,
      choices: req.n,
    };
    const deadline = ctx.startedAt + config.requestTimeoutMs;
    let hold: Hold;
    try {
      hold = await billing.hold({
        accountId: ctx.accountId,
        requestId: ctx.requestId,
        candidates,
        plan,
        expiresAt: deadline + config.holdGraceMs,
      });
    } catch (err) {
      if (err instanceof GatewayError && err.code === 'insufficient_balance') {
        await this.recordRefusal(ctx, candidates[0], err);
      }
      throw err;
    }

    let served: Served | undefined;
    let lastFailure: { provider: ProviderConfig; error: UpstreamError } | undefined;
    try {
      const outcome = await this.attempt(req, hold, plan, route.explicit, deadline);
      served = outcome.served;
      lastFailure = outcome.lastFailure;
      ctx.provider = served?.provider.name ?? lastFailure?.provider.name ?? ctx.provider;
    } catch (err) {
      await billing.release(hold, this.failedUsage(ctx, candidates[0], 'internal_error', 500));
      throw err;
    }

    if (!served) {
      const error = lastFailure
        ? toGatewayError(lastFailure.provider.name, lastFailure.error)
        : new GatewayError('no_provider_available', 'No provider is available for this request right now.', {
            retryAfterSeconds: 30,
          });
      await billing.release(hold, this.failedUsage(ctx, lastFailure?.provider, error.code, error.status));
      throw error;
    }
    return this.settle(ctx, req, hold, served);
  }

  /**
   * The candidates whose wire format can honour the request. A provider chosen by name that cannot is a
   * 400 `unsupported_parameter`; under auto routing such providers are passed over, and the request is
   * refused only when none is left.
   */
  private acceptingCandidates(
    candidates: ProviderConfig[],
    explicit: boolean,
    req: ChatRequest,
  ): ProviderConfig[] {
    let firstRefusal: GatewayError | undefined;
    const accepting: ProviderConfig[] = [];
    for (const provider of candidates) {
      const refusal = this.deps.adapterFor(provider.wireFormat).refusal(provider, callSpec(req, provider));
      if (refusal === undefined) {
        accepting.push(provider);
        continue;
      }
      firstRefusal ??= new GatewayError('unsupported_parameter', `${provider.name}: ${refusal.message}`, {
        param: refusal.param,
      });
      if (explicit) break;
    }
    if (accepting.length === 0 && firstRefusal) throw firstRefusal;
    return accepting;
  }

  /** Tries the hold's candidates in order, failing over only under auto routing, within the deadline. */
  private async attempt(
    req: ChatRequest,
    hold: Hold,
    plan: HoldPlanInput,
    explicit: boolean,
    deadline: number,
  ): Promise<{ served?: Served; lastFailure?: { provider: ProviderConfig; error: UpstreamError } }> {
    const { registry, upstream, adapterFor, logger, observer } = this.deps;
    let lastFailure: { provider: ProviderConfig; error: UpstreamError } | undefined;
    for (const provider of hold.candidates) {
      const remaining = deadline - this.now();
      if (remaining <= 0) {
        lastFailure ??= { provider, error: new UpstreamError('timeout', 'request deadline passed') };
        break;
      }
      if (!registry.health.tryAcquire(provider.name)) continue;
      const cap = capWithinHold(provider, hold.amountNano, plan);
      if (cap === undefined) {
        registry.health.releaseProbe(provider.name);
        continue;
      }
      const adapter = adapterFor(provider.wireFormat);
      const started = performance.now();
      try {
        const upstreamRequest = { ...callSpec(req, provider), maxTokens: cap };
        const httpRequest = adapter.buildRequest(provider, upstreamRequest);
        const response = await upstream.send(httpRequest, {
          timeoutMs: Math.min(provider.timeoutMs, remaining),
        });
        const result = adapter.parseResponse(provider, response, upstreamRequest);
        checkUsage(result, cap * req.n, promptTokenBound(plan.prompt, provider));
        observer?.upstreamAttempt(provider.name, 'ok', (performance.now() - started) / 1000);
        registry.health.recordSuccess(provider.name);
        return { served: { provider, result, cap, dropped: httpRequest.dropped ?? [] } };
      } catch (err) {
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
            err.kind === 'rate_limited' && err.retryAfterMs !== undefined
              ? { retryAfterMs: err.retryAfterMs }
              : {},
          );
        } else registry.health.releaseProbe(provider.name);
        logger.warn(
          { provider: provider.name, kind: err.kind, status: err.status, retryable: err.retryable },
          'upstream call failed',
        );
        lastFailure = { provider, error: err };
        if (explicit || !err.retryable) break;
      }
    }
    return { lastFailure };
  }

  private async settle(
    ctx: RequestContext,
    req: ChatRequest,
    hold: Hold,
    served: Served,
  ): Promise<ChatCompletion> {
    const { provider, result } = served;
    const { usage } = result;
    const estimated = usage.promptTokens === undefined || usage.completionTokens === undefined;
    const { tokenCounter } = this.deps;
    const promptTokens =
      usage.promptTokens ?? (await countPromptTokens(req, provider.imageTokens, tokenCounter));
    const completionTokens =
      usage.completionTokens ?? (await countCompletionTokens(result.choices, tokenCounter));
    const cost = callCost(provider, promptTokens, completionTokens);
    const durationMs = Math.max(0, Math.round(this.now() - ctx.startedAt));
    const model = result.model ?? provider.model;
    const completion: ChatCompletion = {
      id: ctx.requestId,
      created: Math.floor(ctx.startedAt / 1000),
      model,
      provider: provider.name,
      choices: result.choices,
      promptTokens,
      completionTokens,
      cachedPromptTokens: usage.cachedPromptTokens,
      reasoningTokens: usage.reasoningTokens,
      usageEstimated: estimated,
      droppedParams: served.dropped,
      legacyFunctions: req.legacyFunctions,
      logprobs: req.logprobs !== undefined,
      inputCostNano: cost.inputNano,
      outputCostNano: cost.outputNano,
      balanceNano: 0,
      durationMs,
    };
    const idempotency = ctx.idempotency && {
      key: ctx.idempotency.key,
      render: (settled: SettleResult) => JSON.stringify(charged(completion, settled)),
    };
    const settled = await this.deps.billing.settle(
      hold,
      cost.inputNano + cost.outputNano,
      {
        // Spelled out rather than spread from baseUsage(): this literal is built on every success.
        requestId: ctx.requestId,
        accountId: ctx.accountId,
        keyId: ctx.keyId,
        clientGone: ctx.clientGone(),
        createdAt: ctx.startedAt,
        provider: provider.name,
        model,
        promptTokens,
        completionTokens,
        usageEstimated: estimated,
        inputCostNano: cost.inputNano,
        outputCostNano: cost.outputNano,
        status: 'ok',
        errorCode: null,
        httpStatus: 200,
        durationMs,
      },
      idempotency,
    );
    if (settled.shortfallNano > 0) {
      this.deps.logger.warn(
        { requestId: ctx.requestId, provider: provider.name, shortfallNano: settled.shortfallNano },
        'actual cost exceeded hold and balance; shortfall recorded',
      );
    }
    // The completion is this call's own object: on the usual settle only its balance is filled in (a copy
    // of its fourteen fields per call was measurable, docs/performance.md twentieth round).
    let billed = completion;
    if (settled.shortfallNano === 0) completion.balanceNano = settled.balanceNano;
    else billed = charged(completion, settled);
    this.deps.observer?.charged(
      provider.name,
      promptTokens,
      completionTokens,
      billed.inputCostNano + billed.outputCostNano,
    );
    return billed;
  }

  private async recordRefusal(ctx: RequestContext, provider: ProviderConfig | undefined, err: GatewayError) {
    await this.deps.billing.recordRefusal(this.failedUsage(ctx, provider, err.code, err.status));
  }

  private baseUsage(
    ctx: RequestContext,
  ): Pick<UsageRecord, 'requestId' | 'accountId' | 'keyId' | 'clientGone' | 'createdAt'> {
    return {
      requestId: ctx.requestId,
      accountId: ctx.accountId,
      keyId: ctx.keyId,
      clientGone: ctx.clientGone(),
      createdAt: ctx.startedAt,
    };
  }

  private failedUsage(
    ctx: RequestContext,
    provider: ProviderConfig | undefined,
    errorCode: string,
    httpStatus: number,
  ): UsageRecord {
    return {
      ...this.baseUsage(ctx),
      provider: provider?.name ?? null,
      model: provider?.model ?? null,
      promptTokens: 0,
      completionTokens: 0,
      usageEstimated: false,
      inputCostNano: 0,
      outputCostNano: 0,
      status: 'error',
      errorCode,
      httpStatus,
      durationMs: Math.max(0, Math.round(this.now() - ctx.startedAt)),
    };
  }
}

/** The call as one upstream is asked for it (its cap is added once the hold is known). */
function callSpec(req: ChatRequest, provider: ProviderConfig): UpstreamCallSpec {
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
  };
}

/**
 * An upstream that reports more completion tokens than the cap it was sent, or a prompt far beyond what
 * the request could contain, is answering garbage: treated as an unreadable response (no charge).
 */
function checkUsage(result: ChatResult, cap: number, promptBound: number): void {
  const { promptTokens, completionTokens } = result.usage;
  if (completionTokens !== undefined && completionTokens > cap) {
    throw new UpstreamError(
      'bad_response',
      `upstream reported ${completionTokens} completion tokens above the cap ${cap}`,
    );
  }
  if (promptTokens !== undefined && !promptTokensPlausible(promptTokens, promptBound)) {
    throw new UpstreamError(
      'bad_response',
      `upstream reported an implausible prompt token count ${promptTokens}`,
    );
  }
}

/**
 * The completion as billed. Normally the charge is the full cost. When the upstream reported more than
 * the hold covered and the balance could not pay the difference (DESIGN.md "Holds"), the caller is told
 * what was actually deducted — input first, then output — so `meta.cost.total` always equals the change
 * in balance; the unpaid rest is recorded as the usage row's shortfall.
 */
function charged(completion: ChatCompletion, settled: SettleResult): ChatCompletion {
  if (settled.shortfallNano === 0) return { ...completion, balanceNano: settled.balanceNano };
  const inputCostNano = Math.min(completion.inputCostNano, settled.chargedNano);
  return {
    ...completion,
    inputCostNano,
    outputCostNano: settled.chargedNano - inputCostNano,
    balanceNano: settled.balanceNano,
  };
}
