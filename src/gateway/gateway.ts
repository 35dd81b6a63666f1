import { type AccountSummary, callCost, type Hold } from '../billing/billing.js';
import { capWithinHold, type HoldPlanInput, promptSize, promptTokenBound } from '../billing/estimate.js';
import { GatewayError } from '../errors.js';
import type { ChatResult, ProviderConfig } from '../providers/types.js';
import { isProviderName, UpstreamError } from '../providers/types.js';
import type { ProviderStatus } from '../routing/registry.js';
import { resolveRoute } from '../routing/resolve-route.js';
import type { SettleResult, UsageRecord } from '../store/types.js';
import { callSpec, noteFailedAttempt, promptBeyondBound, usageProblem } from './call-spec.js';
import { countCompletionTokens, countPromptTokens } from './count-tokens.js';
import { type GatewayDeps, IDEMPOTENCY_TTL_MS, type Served, type StreamCut } from './deps.js';
import { deltasOf, streamCall } from './stream-call.js';
import type { ChatCompletion, ChatRequest, RequestContext, StreamOutcome, StreamSink } from './types.js';
import { toGatewayError } from './upstream-failure.js';

export {
  type GatewayDeps,
  type GatewayObserver,
  IDEMPOTENCY_TTL_MS,
  type UpstreamOutcome,
  type UpstreamSender,
} from './deps.js';

/**
 * The completion pipeline (docs/architecture.md, "A request's path"), HTTP-free:
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
    if (!ctx.idempotency) return this.serve(ctx, req);
    return this.idempotent(
      ctx,
      ctx.idempotency,
      () => this.serve(ctx, req),
      (first) => first,
    );
  }

  /**
   * Serves one request with `stream: true`: the answer's deltas go to `sink` as they come, and the outcome
   * (the call as billed, and how the stream ended) is returned once it is settled. A failure before the
   * first delta is thrown, as for a plain call. With an idempotency key, a repeat of an answered request
   * gets the stored answer (no upstream call, no charge), which the caller replays as a stream.
   */
  stream(ctx: RequestContext, req: ChatRequest, sink: StreamSink): Promise<StreamOutcome> {
    const serve = () => streamCall(this, this.deps, ctx, req, sink);
    if (!ctx.idempotency) return serve();
    return this.idempotent(ctx, ctx.idempotency, serve, async (completion) => {
      sink.begin({
        id: completion.id,
        created: completion.created,
        provider: completion.provider,
        model: completion.model,
        droppedParams: completion.droppedParams,
        replayed: true,
      });
      const pause = sink.send(deltasOf(completion.choices));
      if (pause) await pause;
      const { incomplete } = completion;
      if (incomplete === undefined) return { completion, ending: 'completed' };
      // The first stream ended early: its replay ends the same way, telling the client so.
      const error = new GatewayError(
        'stream_incomplete',
        incomplete.ending === 'client_gone'
          ? 'The first request with this Idempotency-Key lost its client before the answer was complete; this is what it delivered and was billed for.'
          : `The first request with this Idempotency-Key broke off before the answer was complete (${incomplete.code ?? 'upstream error'}); this is what it delivered and was billed for.`,
      );
      return { completion, ending: incomplete.ending, error };
    });
  }

  private async idempotent<T>(
    ctx: RequestContext,
    idem: NonNullable<RequestContext['idempotency']>,
    serve: () => Promise<T>,
    replay: (first: ChatCompletion) => T | Promise<T>,
  ): Promise<T> {
    const now = this.now();
    const deadline =
      ctx.startedAt + (ctx.stream ? this.deps.config.streamTimeoutMs : this.deps.config.requestTimeoutMs);
    const begun = await this.deps.idempotency.beginIdempotent({
      accountId: ctx.accountId,
      key: idem.key,
      bodyHash: idem.bodyHash,
      requestId: ctx.requestId,
      now,
      lockedUntil: deadline + this.deps.config.holdGraceMs,
      expiresAt: now + IDEMPOTENCY_TTL_MS,
    });
    switch (begun.kind) {
      case 'replay': {
        const first = JSON.parse(begun.responseJson) as ChatCompletion;
        ctx.provider = first.provider;
        return replay({ ...first, replayed: true });
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
      return await serve();
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
    const deadline = ctx.startedAt + this.deps.config.requestTimeoutMs;
    const { hold, plan, explicit, candidates } = await this.prepare(ctx, req, deadline);
    let served: Served | undefined;
    let lastFailure: { provider: ProviderConfig; error: UpstreamError } | undefined;
    try {
      const outcome = await this.attempt(req, hold, plan, explicit, deadline);
      served = outcome.served;
      lastFailure = outcome.lastFailure;
      ctx.provider = served?.provider.name ?? lastFailure?.provider.name ?? ctx.provider;
    } catch (err) {
      await this.deps.billing.release(hold, this.failedUsage(ctx, candidates[0], 'internal_error', 500));
      throw err;
    }

    if (!served) {
      const error = lastFailure
        ? toGatewayError(lastFailure.provider.name, lastFailure.error)
        : new GatewayError('no_provider_available', 'No provider is available for this request right now.', {
            retryAfterSeconds: 30,
          });
      await this.deps.billing.release(
        hold,
        this.failedUsage(ctx, lastFailure?.provider, error.code, error.status),
      );
      throw error;
    }
    return this.settle(ctx, req, hold, served);
  }

  /**
   * Routes the call and holds its cost bound: the candidates that can honour it (refused before any
   * money is held when none can), and the hold, which lasts until `deadline` plus the grace. Used by the
   * plain and the streamed call alike.
   */
  async prepare(
    ctx: RequestContext,
    req: ChatRequest,
    deadline: number,
  ): Promise<{ hold: Hold; plan: HoldPlanInput; explicit: boolean; candidates: ProviderConfig[] }> {
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
    try {
      const hold = await billing.hold({
        accountId: ctx.accountId,
        requestId: ctx.requestId,
        candidates,
        plan,
        expiresAt: deadline + config.holdGraceMs,
      });
      return { hold, plan, explicit: route.explicit, candidates };
    } catch (err) {
      if (err instanceof GatewayError && err.code === 'insufficient_balance') {
        await this.recordRefusal(ctx, candidates[0], err);
      }
      throw err;
    }
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
    const { registry, upstream, adapterFor, observer } = this.deps;
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
        checkUsage(result, cap * req.n);
        observer?.upstreamAttempt(provider.name, 'ok', (performance.now() - started) / 1000);
        registry.health.recordSuccess(provider.name);
        const promptBound = promptTokenBound(plan.prompt, provider);
        const served: Served = { provider, result, cap, promptBound, dropped: httpRequest.dropped ?? [] };
        if (promptBeyondBound(result, promptBound)) {
          served.atMostHold = true;
          this.deps.logger.warn(
            { provider: provider.name, promptTokens: result.usage.promptTokens },
            'upstream reported a prompt beyond the request bound; charged at most the hold',
          );
        }
        return { served };
      } catch (err) {
        noteFailedAttempt(this.deps, provider, err, started, false);
        lastFailure = { provider, error: err };
        if (explicit || !err.retryable) break;
      }
    }
    return { lastFailure };
  }

  /**
   * Charges the call and writes its usage row, from the upstream's usage (counted locally where it
   * reported none). A streamed answer that ended early (`cut`) is billed for what the upstream generated
   * up to the end: its running count or, when higher, the tokens of what arrived, reasoning included. A
   * count is never above what the call could generate or read — the completion cap sent (per choice), the
   * hold's prompt bound — so a counted call is never billed more than its hold.
   */
  async settle(
    ctx: RequestContext,
    req: ChatRequest,
    hold: Hold,
    served: Served,
    cut?: StreamCut,
  ): Promise<ChatCompletion> {
    const { provider, result } = served;
    const { usage } = result;
    const { tokenCounter } = this.deps;
    let estimated = usage.promptTokens === undefined || usage.completionTokens === undefined;
    const promptTokens =
      usage.promptTokens ??
      Math.min(
        await countPromptTokens(req, provider.imageTokens, tokenCounter, ctx.accountId),
        served.promptBound,
      );
    const counted = (): Promise<number> =>
      countCompletionTokens(result.choices, result.reasoning, tokenCounter, ctx.accountId).then((n) =>
        Math.min(n, served.cap * req.n),
      );
    let completionTokens: number;
    if (cut === undefined) {
      completionTokens = usage.completionTokens ?? (await counted());
    } else {
      const arrived = await counted();
      completionTokens = Math.max(usage.completionTokens ?? 0, arrived);
      estimated = estimated || arrived > (usage.completionTokens ?? 0);
    }
    const cost = callCost(provider, promptTokens, completionTokens);
    if (cut !== undefined || estimated || served.atMostHold === true) withinHold(cost, hold.amountNano);
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
    if (cut?.ending !== undefined) {
      completion.incomplete = { ending: cut.ending, code: cut.errorCode, message: cut.message };
    }
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
        status: cut?.status ?? 'ok',
        errorCode: cut?.errorCode ?? null,
        httpStatus: cut?.httpStatus ?? 200,
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
    // The completion is this call's own object: on the usual settle only its balance is filled in (copying
    // all its fields on every call showed in the per-request cost).
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

  /** The usage row of a call that failed (nothing charged). */
  failedUsage(
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

/** A plain answer with implausible usage is treated as unreadable (no charge; failover may follow). */
function checkUsage(result: ChatResult, cap: number): void {
  const problem = usageProblem(result, cap);
  if (problem !== undefined) throw new UpstreamError('bad_response', problem);
}

/** Lowers a cost to at most `limitNano`, taking it off the output first (the prompt was read whole). */
function withinHold(cost: { inputNano: number; outputNano: number }, limitNano: number): void {
  if (cost.inputNano + cost.outputNano <= limitNano) return;
  cost.inputNano = Math.min(cost.inputNano, limitNano);
  cost.outputNano = limitNano - cost.inputNano;
}

/**
 * The completion as billed. Normally the charge is the full cost. When the upstream reported more than
 * the hold covered and the balance could not pay the difference (docs/api.md, "Billing"), the caller is told
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
