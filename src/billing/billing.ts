import { GatewayError } from '../errors.js';
import { formatNano, maxTokensFor, tokenCost } from '../money/money.js';
import type { ProviderConfig } from '../providers/types.js';
import { timeOrderedHex } from '../random.js';
import type { KeyLimitRefusal, SettleInput, SettleResult, Store, UsageRecord } from '../store/types.js';
import type { Bill } from './bill.js';
import {
  type CallShape,
  callCostBound,
  capWithinHold,
  fullHoldFor,
  type HoldPlanInput,
  promptCostBound,
  promptSize,
  promptTokenBound,
} from './estimate.js';

export { type Bill, billFor, type UsageCount } from './bill.js';
export { completionToCount, promptToCount, type TextsToCount } from './countable.js';
export type { CallShape } from './estimate.js';

/** One provider the hold can pay for, and the terms of that attempt. */
export interface Attempt {
  provider: ProviderConfig;
  /** The completion cap to send it, per choice: what the hold pays for (never above the caller's). */
  cap: number;
  /** The hold's bound of the prompt's tokens on this provider: a counted prompt is never billed above it. */
  promptBound: number;
}

export interface Hold {
  holdId: string;
  accountId: string;
  amountNano: number;
  /** The candidates worth trying within this hold, in order, each with its cap (the first always is). */
  attempts: Attempt[];
  /** The calling key, and the window of its spend limit the hold counts in (null: the key has none). */
  keyId?: string;
  keyWindow?: number | null;
}

export interface HoldRequest {
  accountId: string;
  /** The calling key: its spend limit, when it has one, is held against with the balance. */
  keyId?: string;
  requestId: string;
  candidates: readonly ProviderConfig[];
  call: CallShape;
  minCompletionTokens: number;
  expiresAt: number;
}

/** What a settle charged: the bill's split after a shortfall (if any), and the balance after it. */
export interface Charged {
  inputCostNano: number;
  outputCostNano: number;
  balanceNano: number;
  shortfallNano: number;
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
    const plan: HoldPlanInput = {
      prompt: promptSize(req.call),
      requestedMaxTokens: req.call.maxTokens,
      minCompletionTokens: req.minCompletionTokens,
      choices: req.call.n,
    };
    if (req.call.maxTokensFloor !== undefined) plan.ceilingFloor = req.call.maxTokensFloor;
    const full = fullHoldFor(req.candidates, plan);
    const first = await this.place(req, full);
    if (first.ok) return this.holdOf(req, plan, first, full);

    const primary = req.candidates[0];
    if (!primary) throw new Error('hold() needs at least one candidate');
    // What may be held: the balance, and no more than the key's limit has left.
    const { key } = first;
    const keyBinds = key !== undefined && key.remainingNano < first.balanceNano;
    const balance = keyBinds ? key.remainingNano : first.balanceNano;
    const refusal = (needed: number, short: number, k: KeyLimitRefusal | undefined, binds: boolean) =>
      binds && k ? keyLimitExceeded(k, needed) : insufficient(short, needed);
    const { requestedMaxTokens } = plan;
    let amount: number | undefined;
    if (requestedMaxTokens !== undefined && plan.ceilingFloor === undefined) {
      const needed = callCostBound(primary, plan, requestedMaxTokens);
      if (needed <= balance) amount = needed;
      else if (keyBinds) throw keyLimitExceeded(key, needed);
      else throw explicitCapError(primary, plan, requestedMaxTokens, needed, balance);
    } else {
      const cap = capWithinHold(primary, balance, plan);
      if (cap !== undefined) amount = callCostBound(primary, plan, cap);
    }
    if (amount === undefined)
      throw refusal(
        callCostBound(primary, plan, Math.max(plan.ceilingFloor ?? 0, plan.minCompletionTokens)),
        balance,
        key,
        keyBinds,
      );
    const second = await this.place(req, amount);
    if (!second.ok) {
      const binds = second.key !== undefined && second.key.remainingNano < second.balanceNano;
      throw refusal(amount, second.balanceNano, second.key, binds);
    }
    return this.holdOf(req, plan, second, amount);
  }

  /**
   * Charges a call's bill (`billFor`) and returns the rest of the hold, writing the usage row with the
   * bill's tokens and costs (one transaction). When the hold and the balance together cannot pay the bill,
   * what was charged is split input first, then output, so the caller is told exactly what left the
   * balance; the rest is the usage row's shortfall.
   */
  async settle(
    hold: Hold,
    bill: Bill,
    call: Omit<
      UsageRecord,
      'promptTokens' | 'completionTokens' | 'usageEstimated' | 'inputCostNano' | 'outputCostNano'
    >,
    idempotency?: { key: string; render: (charged: Charged) => string },
  ): Promise<Charged> {
    // The row is the caller's record completed with the bill's tokens and costs (in place: the record is
    // the settle's own, and a copy of its thirty-odd fields would be the settle's largest allocation).
    const usage = call as UsageRecord;
    usage.promptTokens = bill.promptTokens;
    usage.completionTokens = bill.completionTokens;
    usage.usageEstimated = bill.estimated;
    usage.inputCostNano = bill.inputCostNano;
    usage.outputCostNano = bill.outputCostNano;
    const input: SettleInput = {
      holdId: hold.holdId,
      accountId: hold.accountId,
      holdAmountNano: hold.amountNano,
      keyId: hold.keyId,
      keyWindow: hold.keyId === undefined ? undefined : (hold.keyWindow ?? null),
      costNano: bill.inputCostNano + bill.outputCostNano,
      usage,
    };
    if (idempotency) {
      input.idempotency = {
        key: idempotency.key,
        render: (settled) => idempotency.render(charged(bill, settled)),
      };
    }
    try {
      return charged(bill, await this.store.settle(input));
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
        ...keyOf(hold),
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

  private async place(req: HoldRequest, amountNano: number): Promise<Placed> {
    const holdId = `hold_${timeOrderedHex(6)}`;
    const result = await this.store.placeHold({
      holdId,
      accountId: req.accountId,
      requestId: req.requestId,
      amountNano,
      owner: this.instanceId,
      createdAt: this.now(),
      expiresAt: req.expiresAt,
      ...(req.keyId === undefined ? {} : { keyId: req.keyId }),
    });
    if (result.ok) return { ok: true, holdId, keyWindow: result.keyWindow ?? null };
    if (result.reason === 'account_inactive') throw new GatewayError('invalid_api_key', 'Invalid API key');
    return { ok: false, balanceNano: result.balanceNano, key: result.key };
  }

  /** The hold, with the cap each candidate gets within it; a candidate it cannot pay for is left out. */
  private holdOf(
    req: HoldRequest,
    plan: HoldPlanInput,
    placed: { holdId: string; keyWindow: number | null },
    amountNano: number,
  ): Hold {
    const { holdId } = placed;
    this.open.add(holdId);
    const attempts: Attempt[] = [];
    for (const provider of req.candidates) {
      const cap = capWithinHold(provider, amountNano, plan);
      if (cap !== undefined)
        attempts.push({ provider, cap, promptBound: promptTokenBound(plan.prompt, provider) });
    }
    const hold: Hold = { holdId, accountId: req.accountId, amountNano, attempts };
    if (req.keyId !== undefined) {
      hold.keyId = req.keyId;
      hold.keyWindow = placed.keyWindow;
    }
    return hold;
  }
}

type Placed =
  | { ok: true; holdId: string; keyWindow: number | null }
  | { ok: false; balanceNano: number; key: KeyLimitRefusal | undefined };

/** The hold's key and window, as the store's settle and release take them. */
function keyOf(hold: Hold): { keyId?: string; keyWindow?: number | null } {
  return hold.keyId === undefined ? {} : { keyId: hold.keyId, keyWindow: hold.keyWindow ?? null };
}

/** 402 key_limit_exceeded: the key's limit, what is left of it, and when it resets. */
function keyLimitExceeded(key: KeyLimitRefusal, neededNano: number): GatewayError {
  const resets =
    key.resetsAt === null ? 'It does not reset.' : `It resets at ${new Date(key.resetsAt).toISOString()}.`;
  return new GatewayError(
    'key_limit_exceeded',
    `This API key's spend limit cannot cover this request: it needs up to $${formatNano(neededNano)}, the limit is $${formatNano(key.limitNano)} and $${formatNano(key.remainingNano)} is left. ${resets}`,
  );
}

/** The bill as charged: whole, or (a shortfall) what was charged split input first. */
function charged(bill: Bill, settled: SettleResult): Charged {
  const { balanceNano, shortfallNano, chargedNano } = settled;
  if (shortfallNano === 0) {
    return {
      inputCostNano: bill.inputCostNano,
      outputCostNano: bill.outputCostNano,
      balanceNano,
      shortfallNano,
    };
  }
  const inputCostNano = Math.min(bill.inputCostNano, chargedNano);
  return { inputCostNano, outputCostNano: chargedNano - inputCostNano, balanceNano, shortfallNano };
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
  const inputCost = promptCostBound(provider, promptTokenBound(plan.prompt, provider));
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
