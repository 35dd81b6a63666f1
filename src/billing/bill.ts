import { tokenCost } from '../money/money.js';
import type { ProviderConfig } from '../providers/types.js';

/**
 * What a call used, as the upstream reported it and as Tollgate counted it (docs/api.md, "Counted
 * usage"). `undefined` is "not known", never 0: an upstream that reported nothing is counted.
 */
export interface UsageCount {
  reportedPrompt: number | undefined;
  reportedCompletion: number | undefined;
  /** The prompt counted locally: given when the upstream reported none. */
  countedPrompt?: number;
  /**
   * What arrived, counted locally (text, tool calls, reasoning): given when the upstream reported no
   * completion count, or when the answer was cut short (a running count may lag what was generated).
   */
  countedCompletion?: number;
}

/** A call's bill: the tokens charged for and their cost, per side. */
export interface Bill {
  promptTokens: number;
  completionTokens: number;
  /** True when a count of Tollgate's own stands in for, or raised, what the upstream reported. */
  estimated: boolean;
  inputCostNano: number;
  outputCostNano: number;
}

/** Which attempt served: its provider's prices, and what its hold paid for. */
interface Served {
  provider: Pick<ProviderConfig, 'inputPriceNano' | 'outputPriceNano'>;
  /** The completion cap sent, per choice. */
  cap: number;
  /** The hold's bound of the prompt's tokens on this provider. */
  promptBound: number;
}

/**
 * The bill of a call, from what it used: the money rule of the settle, written once.
 *
 * - The prompt is the upstream's count, else Tollgate's, which is never above the hold's prompt bound.
 * - The completion is the upstream's count; where Tollgate counted what arrived (no count reported, or an
 *   answer cut short), the higher of the two — the counted part never above the cap sent × `choices`.
 * - Cost: ceil(tokens × price / 10^6) per side.
 * - `withinHold` (a count stood in, the answer was cut, or the upstream reported a prompt beyond any
 *   plausible bound): the cost is lowered to at most the hold, taken off the output first, so such a call
 *   never costs more than was held. Otherwise a reported cost above the hold is charged as far as the
 *   balance goes (the store records any shortfall).
 */
export function billFor(
  served: Served,
  choices: number,
  usage: UsageCount,
  limit: { holdNano: number; withinHold: boolean },
): Bill {
  const promptTokens = usage.reportedPrompt ?? Math.min(usage.countedPrompt ?? 0, served.promptBound);
  let completionTokens = usage.reportedCompletion ?? 0;
  let estimated = usage.reportedPrompt === undefined;
  if (usage.countedCompletion !== undefined) {
    const counted = Math.min(usage.countedCompletion, served.cap * choices);
    if (usage.reportedCompletion === undefined || counted > usage.reportedCompletion) {
      completionTokens = counted;
      estimated = true;
    }
  }
  const cost = {
    inputNano: tokenCost(promptTokens, served.provider.inputPriceNano),
    outputNano: tokenCost(completionTokens, served.provider.outputPriceNano),
  };
  if (limit.withinHold || estimated) withinHold(cost, limit.holdNano);
  return {
    promptTokens,
    completionTokens,
    estimated,
    inputCostNano: cost.inputNano,
    outputCostNano: cost.outputNano,
  };
}

/** Lowers a cost to at most `limitNano`, taking it off the output first (the prompt was read whole). */
export function withinHold(cost: { inputNano: number; outputNano: number }, limitNano: number): void {
  if (cost.inputNano + cost.outputNano <= limitNano) return;
  cost.inputNano = Math.min(cost.inputNano, limitNano);
  cost.outputNano = limitNano - cost.inputNano;
}
