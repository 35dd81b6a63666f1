import { type AccountSummary, promptToCount } from '../billing/billing.js';
import { GatewayError, modelNotServed } from '../errors.js';
import { isProviderName, type ProviderName, UpstreamError } from '../providers/types.js';
import type { ProviderStatus } from '../routing/registry.js';
import { type Opening, openCall } from './call.js';
import { callSpec, promptBeyondBound, usageProblem } from './call-spec.js';
import { type GatewayDeps, IDEMPOTENCY_TTL_MS } from './deps.js';
import { type Served, settleCall } from './settle.js';
import { deltasOf, streamCall } from './stream-call.js';
import type { ChatCompletion, ChatRequest, RequestContext, StreamOutcome, StreamSink } from './types.js';

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
    const serve = () => streamCall(this.deps, ctx, req, sink);
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
      throw modelNotServed(id);
    }
    return registry.status(name);
  }

  /**
   * An estimate of the prompt tokens of `req` on `provider` (`POST /api/v1/messages/count_tokens`): the
   * fallback tokenizer's count of its texts, images at the provider's bound, and the bytes only the
   * original body carries at four to a token.
   */
  /**
   * The prompt tokens of `req` on `provider`: the upstream's own count where its format has one for this
   * call (it costs nothing), else — or when that count fails — the gateway's estimate.
   */
  async countPromptTokens(
    req: ChatRequest,
    provider: ProviderName,
    owner: string,
  ): Promise<{ tokens: number; source: 'upstream' | 'estimate' }> {
    const config = this.deps.registry.get(provider);
    const adapter = this.deps.adapterFor(config.wireFormat);
    const countRequest = adapter.buildCountRequest?.(config, callSpec(req, config));
    if (countRequest !== undefined && adapter.parseCount !== undefined) {
      try {
        const response = await this.deps.upstream.send(countRequest, { timeoutMs: config.timeoutMs });
        return { tokens: adapter.parseCount(config, response), source: 'upstream' };
      } catch (err) {
        this.deps.logger.warn({ err, provider }, 'upstream token count failed; answering the estimate');
      }
    }
    return { tokens: await this.estimatePromptTokens(req, config.imageTokens, owner), source: 'estimate' };
  }

  private async estimatePromptTokens(
    req: ChatRequest,
    imageTokens: Parameters<typeof promptToCount>[1],
    owner: string,
  ): Promise<number> {
    const { texts, fixedTokens } = promptToCount(req, imageTokens);
    const { counts } = await this.deps.tokenCounter.count(texts, owner);
    let total = fixedTokens + Math.ceil((req.uncarriedPromptBytes ?? 0) / 4);
    for (const n of counts) total += n;
    return total;
  }

  /** Balance and spend of an account (`GET /api/v1/key`). */
  summary(accountId: string): Promise<AccountSummary | undefined> {
    return this.deps.billing.summary(accountId);
  }

  /** A plain call: the one call path, opening an upstream by reading its whole answer, then the settle. */
  private async serve(ctx: RequestContext, req: ChatRequest): Promise<ChatCompletion> {
    const deadline = ctx.startedAt + this.deps.config.requestTimeoutMs;
    const { hold, answer } = await openCall(this.deps, ctx, req, deadline, plainOpening(this.deps, req));
    return settleCall(this.deps, ctx, req, hold, answer);
  }
}

/**
 * Opens a plain call on one upstream: its whole answer, read and checked. An answer whose completion count
 * is above the cap it was sent is unreadable (a failure; failover may follow); a prompt reported beyond any
 * plausible bound is served but charged at most the hold.
 */
function plainOpening(deps: GatewayDeps, req: ChatRequest): Opening<Served> {
  return {
    stream: false,
    async open(attempt, remaining) {
      const { provider, cap } = attempt;
      const adapter = deps.adapterFor(provider.wireFormat);
      const upstreamRequest = { ...callSpec(req, provider), maxTokens: cap };
      const httpRequest = adapter.buildRequest(provider, upstreamRequest);
      const response = await deps.upstream.send(httpRequest, {
        timeoutMs: Math.min(provider.timeoutMs, remaining),
      });
      const result = adapter.parseResponse(provider, response, upstreamRequest);
      const problem = usageProblem(result, cap * req.n);
      if (problem !== undefined) throw new UpstreamError('bad_response', problem);
      const served: Served = { attempt, result, dropped: httpRequest.dropped ?? [] };
      if (promptBeyondBound(result, attempt.promptBound)) {
        served.atMostHold = true;
        deps.logger.warn(
          { provider: provider.name, promptTokens: result.usage.promptTokens },
          'upstream reported a prompt beyond the request bound; charged at most the hold',
        );
      }
      return served;
    },
  };
}
