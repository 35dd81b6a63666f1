import { type Attempt, billFor, completionToCount, type Hold, promptToCount } from '../billing/billing.js';
import type { ChatResult, ProviderConfig } from '../providers/types.js';
import type { UsageRecord } from '../store/types.js';
import type { GatewayDeps, StreamCut } from './deps.js';
import type { TokenCounter } from './token-counter.js';
import type { ChatCompletion, ChatRequest, RequestContext } from './types.js';

/** An upstream's answer, as the settle needs it. */
export interface Served {
  attempt: Attempt;
  result: ChatResult;
  /** Request fields the upstream's wire format left out. */
  dropped: string[];
  /** The upstream reported a prompt beyond the request's bound (`promptBeyondBound`): charge at most the hold. */
  atMostHold?: boolean;
}

/** Sums the token counts of what `texts` holds (off the event loop, bounded in time), for `owner`. */
async function count(
  counter: TokenCounter,
  { texts, fixedTokens }: { texts: string[]; fixedTokens: number },
  owner: string,
): Promise<number> {
  const { counts } = await counter.count(texts, owner);
  let total = fixedTokens;
  for (const n of counts) total += n;
  return total;
}

/**
 * Charges the call and writes its usage row (`Billing.settle`, one transaction), from the upstream's usage
 * and, where it reported none or the answer was cut (`cut`), Tollgate's count of what it read and generated
 * (`billFor` says what is charged then; docs/api.md, "Counted usage"). Returns the completion as billed.
 */
export async function settleCall(
  deps: GatewayDeps,
  ctx: RequestContext,
  req: ChatRequest,
  hold: Hold,
  served: Served,
  cut?: StreamCut,
): Promise<ChatCompletion> {
  const { attempt, result } = served;
  const { provider } = attempt;
  const { usage } = result;
  const counter = deps.tokenCounter;
  const owner = ctx.accountId;
  const bill = billFor(
    attempt,
    req.n,
    {
      reportedPrompt: usage.promptTokens,
      reportedCompletion: usage.completionTokens,
      reportedCacheRead: usage.cachedPromptTokens,
      reportedCacheWrite: usage.cacheWritePromptTokens,
      ...(usage.promptTokens === undefined
        ? { countedPrompt: await count(counter, promptToCount(req, provider.imageTokens), owner) }
        : {}),
      ...(usage.completionTokens === undefined || cut !== undefined
        ? {
            countedCompletion: await count(
              counter,
              completionToCount(result.choices, result.reasoning),
              owner,
            ),
          }
        : {}),
    },
    { holdNano: hold.amountNano, withinHold: cut !== undefined || served.atMostHold === true },
  );
  const now = deps.now ?? Date.now;
  const durationMs = Math.max(0, Math.round(now() - ctx.startedAt));
  const model = result.model ?? provider.model;
  const completion: ChatCompletion = {
    id: ctx.requestId,
    created: Math.floor(ctx.startedAt / 1000),
    model,
    provider: provider.name,
    choices: result.choices,
    promptTokens: bill.promptTokens,
    completionTokens: bill.completionTokens,
    // The cached parts as billed, named where the upstream's format names them.
    cachedPromptTokens: usage.cachedPromptTokens === undefined ? undefined : bill.cacheReadTokens,
    cacheWritePromptTokens: usage.cacheWritePromptTokens === undefined ? undefined : bill.cacheWriteTokens,
    reasoningTokens: usage.reasoningTokens,
    usageEstimated: bill.estimated,
    droppedParams: served.dropped,
    legacyFunctions: req.legacyFunctions,
    logprobs: req.logprobs !== undefined,
    inputCostNano: bill.inputCostNano,
    outputCostNano: bill.outputCostNano,
    balanceNano: 0,
    durationMs,
  };
  if (result.anthropic !== undefined) completion.anthropic = result.anthropic;
  if (cut?.ending !== undefined) {
    completion.incomplete = { ending: cut.ending, code: cut.errorCode, message: cut.message };
  }
  const charged = await deps.billing.settle(
    hold,
    bill,
    {
      requestId: ctx.requestId,
      accountId: ctx.accountId,
      keyId: ctx.keyId,
      clientGone: ctx.clientGone(),
      createdAt: ctx.startedAt,
      provider: provider.name,
      model,
      cacheReadTokens: bill.cacheReadTokens,
      cacheWriteTokens: bill.cacheWriteTokens,
      status: cut?.status ?? 'ok',
      errorCode: cut?.errorCode ?? null,
      httpStatus: cut?.httpStatus ?? 200,
      durationMs,
    },
    ctx.idempotency && {
      key: ctx.idempotency.key,
      render: (answer) => JSON.stringify({ ...completion, ...answer }),
    },
  );
  if (charged.shortfallNano > 0) {
    deps.logger.warn(
      { requestId: ctx.requestId, provider: provider.name, shortfallNano: charged.shortfallNano },
      'actual cost exceeded hold and balance; shortfall recorded',
    );
  }
  ctx.tokensSettled?.(bill.promptTokens + bill.completionTokens);
  completion.inputCostNano = charged.inputCostNano;
  completion.outputCostNano = charged.outputCostNano;
  completion.balanceNano = charged.balanceNano;
  deps.observer?.charged(
    provider.name,
    bill.promptTokens,
    bill.completionTokens,
    charged.inputCostNano + charged.outputCostNano,
  );
  return completion;
}

/** The usage row of a call that failed or was refused (nothing charged). */
export function failedUsage(
  deps: Pick<GatewayDeps, 'now'>,
  ctx: RequestContext,
  provider: ProviderConfig | undefined,
  errorCode: string,
  httpStatus: number,
): UsageRecord {
  const now = deps.now ?? Date.now;
  return {
    requestId: ctx.requestId,
    accountId: ctx.accountId,
    keyId: ctx.keyId,
    clientGone: ctx.clientGone(),
    createdAt: ctx.startedAt,
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
    durationMs: Math.max(0, Math.round(now() - ctx.startedAt)),
  };
}
