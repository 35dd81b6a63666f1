import type { Attempt, Hold } from '../billing/billing.js';
import { GatewayError } from '../errors.js';
import type { ProviderConfig } from '../providers/types.js';
import { UpstreamError } from '../providers/types.js';
import { resolveRoute } from '../routing/resolve-route.js';
import { callSpec, noteFailedAttempt } from './call-spec.js';
import type { GatewayDeps } from './deps.js';
import { failedUsage } from './settle.js';
import type { ChatRequest, RequestContext } from './types.js';
import { toGatewayError } from './upstream-failure.js';

/**
 * How a call is opened on one upstream, the only step in which a plain and a streamed call differ before
 * the settle: the plain one reads the whole answer, the streamed one reads until its first delta. Either
 * way, once `open` resolves, the call is that attempt's: no failover after it.
 */
export interface Opening<T> {
  /** Opens the call on `attempt`, within `remainingMs` of the request's deadline. */
  open(attempt: Attempt, remainingMs: number): Promise<T>;
  /** For the log: whether this is a streamed call. */
  stream: boolean;
  /** Whether the caller has gone: no further attempt is made, and the error says so. */
  callerGone?: () => boolean;
}

/** A call opened on one upstream: its hold (the caller settles it) and what the opening read. */
export interface Opened<T> {
  hold: Hold;
  attempt: Attempt;
  answer: T;
}

/**
 * The one call path (docs/architecture.md, "A request's path"): route → hold → the hold's attempts in
 * order, failing over under auto routing on a retryable failure, within the request's deadline. On every
 * failure the whole hold is released and the error thrown; on success the caller owns the hold until it
 * settles it (`settleCall`).
 */
export async function openCall<T>(
  deps: GatewayDeps,
  ctx: RequestContext,
  req: ChatRequest,
  deadline: number,
  opening: Opening<T>,
): Promise<Opened<T>> {
  const { hold, explicit } = await routeAndHold(deps, ctx, req, deadline);
  const now = deps.now ?? Date.now;
  const { registry, observer } = deps;
  let lastFailure: { provider: ProviderConfig; error: UpstreamError } | undefined;
  try {
    for (const attempt of hold.attempts) {
      const { provider } = attempt;
      if (opening.callerGone?.()) break;
      const remaining = deadline - now();
      if (remaining <= 0) {
        lastFailure ??= { provider, error: new UpstreamError('timeout', 'request deadline passed') };
        break;
      }
      if (!registry.health.tryAcquire(provider.name)) continue;
      const started = performance.now();
      try {
        const answer = await opening.open(attempt, remaining);
        const waitedMs = performance.now() - started;
        if (ctx.upstreamWait) ctx.upstreamWait.upstreamMs += waitedMs;
        observer?.upstreamAttempt(provider.name, 'ok', waitedMs / 1000);
        registry.health.recordSuccess(provider.name);
        ctx.provider = provider.name;
        return { hold, attempt, answer };
      } catch (err) {
        if (ctx.upstreamWait) ctx.upstreamWait.upstreamMs += performance.now() - started;
        noteFailedAttempt(deps, provider, err, started, opening.stream);
        lastFailure = { provider, error: err };
        ctx.provider = provider.name;
        if (explicit || !err.retryable) break;
      }
    }
  } catch (err) {
    // An error of the gateway's own: nothing was served, the hold goes back.
    await deps.billing.release(
      hold,
      failedUsage(deps, ctx, hold.attempts[0]?.provider, 'internal_error', 500),
    );
    throw err;
  }
  const error = opening.callerGone?.()
    ? new GatewayError('provider_error', 'The client left before the answer began.')
    : lastFailure
      ? toGatewayError(lastFailure.provider.name, lastFailure.error)
      : new GatewayError('no_provider_available', 'No provider is available for this request right now.', {
          retryAfterSeconds: 30,
        });
  const provider = lastFailure?.provider ?? hold.attempts[0]?.provider;
  await deps.billing.release(hold, failedUsage(deps, ctx, provider, error.code, error.status));
  throw error;
}

/**
 * Routes the call and holds its cost bound: the candidates that can honour it (refused before any money
 * is held when none can), and the hold, which lasts until `deadline` plus the grace.
 */
async function routeAndHold(
  deps: GatewayDeps,
  ctx: RequestContext,
  req: ChatRequest,
  deadline: number,
): Promise<{ hold: Hold; explicit: boolean }> {
  const { config, billing, registry, rotation } = deps;
  const route = await resolveRoute(
    { model: req.model, provider: req.provider },
    registry,
    rotation,
    ctx.keyAllowed,
  );
  ctx.provider = route.candidates[0]?.name;
  // Before any money is held: a candidate whose wire format cannot honour the request is left out (under
  // auto routing) or refuses it (when chosen by name), with no upstream call and no charge.
  const candidates = acceptingCandidates(deps, route.candidates, route.explicit, req);
  ctx.provider = candidates[0]?.name;
  try {
    const hold = await billing.hold({
      accountId: ctx.accountId,
      keyId: ctx.keyId,
      requestId: ctx.requestId,
      candidates,
      call: req,
      minCompletionTokens: config.minCompletionTokens,
      expiresAt: deadline + config.holdGraceMs,
    });
    return { hold, explicit: route.explicit };
  } catch (err) {
    if (
      err instanceof GatewayError &&
      (err.code === 'insufficient_balance' || err.code === 'key_limit_exceeded')
    ) {
      await billing.recordRefusal(failedUsage(deps, ctx, candidates[0], err.code, err.status));
    }
    throw err;
  }
}

/**
 * The candidates whose wire format can honour the request. A provider chosen by name that cannot is a 400
 * `unsupported_parameter`; under auto routing such providers are passed over, and the request is refused
 * only when none is left.
 */
function acceptingCandidates(
  deps: GatewayDeps,
  candidates: ProviderConfig[],
  explicit: boolean,
  req: ChatRequest,
): ProviderConfig[] {
  let firstRefusal: GatewayError | undefined;
  const accepting: ProviderConfig[] = [];
  for (const provider of candidates) {
    const refusal = deps.adapterFor(provider.wireFormat).refusal(provider, callSpec(req, provider));
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
