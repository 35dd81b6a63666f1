import { GatewayError } from '../errors.js';
import { formatNano, maxTokensFor, tokenCost } from '../money/money.js';
import type { ProviderConfig } from '../providers/types.js';
import { timeOrderedHex } from '../random.js';
import type { SettleInput, Store, UsageRecord } from '../store/types.js';
import {
  callCostBound,
  capWithinHold,
  fullHoldFor,
  type HoldPlanInput,
  promptTokenBound,
} from './estimate.js';

export interface Hold {
  holdId: string;
  accountId: string;
  amountNano: number;
  /** The candidates worth trying within this hold (the first always is). */
  candidates: ProviderConfig[];
}

export interface HoldRequest {
  accountId: string;
  requestId: string;
  candidates: readonly ProviderConfig[];
  plan: HoldPlanInput;
  expiresAt: number;
}

export interface AccountSummary {
  /** Available balance (open holds already deducted). */
  balanceNano: number;
  openHoldsNano: number;
  todayNano: number;
  monthNano: number;
}

export interface CallCost {
  inputNano: number;
  outputNano: number;
}

/** Actual cost of a call: ceil(tokens × price / 10^6) per side. */
export function callCost(provider: ProviderConfig, promptTokens: number, completionTokens: number): CallCost {
  return {
    inputNano: tokenCost(promptTokens, provider.inputPriceNano),
    outputNano: tokenCost(completionTokens, provider.outputPriceNano),
  };
}

/**
 * Holds, settles and releases money for completion requests. The arithmetic that must be atomic lives in
 * the store's transactions; this module decides how much to hold and words the 402s.
 */
export class Billing {
  /** Holds of calls this process is serving: placed, not yet settled or released. */
  private readonly open = new Set<string>();

  constructor(
    private readonly store: Store,
    private readonly instanceId: string,
    private readonly now: () => number = Date.now,
  ) {}

  /** The ids of the holds this process placed and has not yet settled or released. */
  heldNow(): string[] {
    return [...this.open];
  }

  /**
   * Holds an upper bound of the call's cost: enough for every candidate at its desired
   * cap when the balance allows; otherwise enough for the first candidate, at a lowered cap when the caller
   * gave none; otherwise 402 insufficient_balance.
   */
  async hold(req: HoldRequest): Promise<Hold> {
    const full = fullHoldFor(req.candidates, req.plan);
    const first = await this.place(req, full);
    if (first.ok) return this.holdOf(req, first.holdId, full);

    const primary = req.candidates[0];
    if (!primary) throw new Error('hold() needs at least one candidate');
    const balance = first.balanceNano;
    const { plan } = req;
    const { requestedMaxTokens } = plan;
    let amount: number | undefined;
    if (requestedMaxTokens !== undefined) {
      const needed = callCostBound(primary, plan, requestedMaxTokens);
      if (needed <= balance) amount = needed;
      else throw explicitCapError(primary, plan, requestedMaxTokens, needed, balance);
    } else {
      const cap = capWithinHold(primary, balance, plan);
      if (cap !== undefined) amount = callCostBound(primary, plan, cap);
    }
    if (amount === undefined)
      throw insufficient(balance, callCostBound(primary, plan, plan.minCompletionTokens));
    const second = await this.place(req, amount);
    if (!second.ok) throw insufficient(second.balanceNano, amount);
    return this.holdOf(req, second.holdId, amount);
  }

  /** Charges the actual cost and returns the rest of the hold, writing the usage row (one transaction). */
  async settle(hold: Hold, costNano: number, usage: UsageRecord, idempotency?: SettleInput['idempotency']) {
    const input: SettleInput = {
      holdId: hold.holdId,
      accountId: hold.accountId,
      holdAmountNano: hold.amountNano,
      costNano,
      usage,
    };
    // Set only when there is one (no spread of an empty object on every call).
    if (idempotency) input.idempotency = idempotency;
    try {
      return await this.store.settle(input);
    } finally {
      this.open.delete(hold.holdId);
    }
  }

  /** Returns the whole hold (every candidate failed), writing the failed request's usage row. */
  async release(hold: Hold, usage: UsageRecord | null) {
    try {
      return await this.store.release({
        holdId: hold.holdId,
        accountId: hold.accountId,
        holdAmountNano: hold.amountNano,
        usage,
      });
    } finally {
      this.open.delete(hold.holdId);
    }
  }

  /** Balance and spend of an account: today and this calendar month (UTC). */
  async summary(accountId: string): Promise<AccountSummary | undefined> {
    const account = await this.store.getAccount(accountId);
    if (!account) return undefined;
    const { todayNano, monthNano } = await this.store.spendOf(accountId, this.now());
    const openHoldsNano = await this.store.openHoldsNano(accountId);
    return { balanceNano: account.balanceNano, openHoldsNano, todayNano, monthNano };
  }

  /**
   * Counts a request refused before any money was held (402): no usage row of its own, one more in its
   * key's count of the minute (docs/operations.md "Refused requests"), so a flood of refusals cannot grow
   * the database by a row each.
   */
  recordRefusal(usage: UsageRecord): Promise<void> {
    return this.store.recordRefusal({
      accountId: usage.accountId,
      keyId: usage.keyId,
      errorCode: usage.errorCode ?? 'insufficient_balance',
      httpStatus: usage.httpStatus,
      at: usage.createdAt,
    });
  }

  private async place(
    req: HoldRequest,
    amountNano: number,
  ): Promise<{ ok: true; holdId: string } | { ok: false; balanceNano: number }> {
    const holdId = `hold_${timeOrderedHex(6)}`;
    const result = await this.store.placeHold({
      holdId,
      accountId: req.accountId,
      requestId: req.requestId,
      amountNano,
      owner: this.instanceId,
      createdAt: this.now(),
      expiresAt: req.expiresAt,
    });
    if (result.ok) return { ok: true, holdId };
    if (result.reason === 'account_inactive') throw new GatewayError('invalid_api_key', 'Invalid API key');
    return { ok: false, balanceNano: result.balanceNano };
  }

  private holdOf(req: HoldRequest, holdId: string, amountNano: number): Hold {
    this.open.add(holdId);
    const candidates = req.candidates.filter(
      (c, i) => i === 0 || capWithinHold(c, amountNano, req.plan) !== undefined,
    );
    return { holdId, accountId: req.accountId, amountNano, candidates };
  }
}

function insufficient(balanceNano: number, neededNano: number): GatewayError {
  return new GatewayError(
    'insufficient_balance',
    `Insufficient balance: this request needs up to $${formatNano(neededNano)} but the available balance is $${formatNano(balanceNano)}. Please add credits to your account.`,
  );
}

function explicitCapError(
  provider: ProviderConfig,
  plan: HoldPlanInput,
  maxTokens: number,
  neededNano: number,
  balanceNano: number,
): GatewayError {
  const inputCost = tokenCost(promptTokenBound(plan.prompt, provider), provider.inputPriceNano);
  const largest = Math.min(
    maxTokens,
    Math.floor(maxTokensFor(balanceNano - inputCost, provider.outputPriceNano) / plan.choices),
  );
  const hint =
    largest >= 1
      ? ` The largest max_tokens that fits is ${largest}.`
      : ' The balance does not cover the prompt itself.';
  return new GatewayError(
    'insufficient_balance',
    `Insufficient balance: max_tokens ${maxTokens} needs up to $${formatNano(neededNano)} but the available balance is $${formatNano(balanceNano)}.${hint} Please add credits to your account.`,
  );
}
