import { tokenCost } from '../money/money.js';
import type { ProviderConfig } from '../providers/types.js';
import { promptPriceBound } from './estimate.js';

/**
 * What a call used, as the upstream reported it and as Tollgate counted it (docs/api.md, "Counted
 * usage"). `undefined` is "not known", never 0: an upstream that reported nothing is counted.
 */
export interface UsageCount {
  reportedPrompt: number | undefined;
  reportedCompletion: number | undefined;
  /** The part of the reported prompt read from the upstream's cache, when reported. */
  reportedCacheRead?: number | undefined;
  /** The part of the reported prompt written to the upstream's cache, when reported. */
  reportedCacheWrite?: number | undefined;
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
  /** The whole prompt, its cached parts included. */
  promptTokens: number;
  /** The part of `promptTokens` billed at the cache-read price. */
  cacheReadTokens: number;
  /** The part of `promptTokens` billed at the cache-write price. */
  cacheWriteTokens: number;
  completionTokens: number;
  /** True when a count of Tollgate's own stands in for, or raised, what the upstream reported. */
  estimated: boolean;
  inputCostNano: number;
  outputCostNano: number;
}

/** Which attempt served: its provider's prices, and what its hold paid for. */
interface Served {
  provider: Pick<
    ProviderConfig,
    'inputPriceNano' | 'outputPriceNano' | 'cacheReadPriceNano' | 'cacheWritePriceNano'
  >;
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
 * - The prompt's cached parts are those the upstream reported with its prompt count (none when the prompt
 *   was counted here), the read part never above the prompt, the write part never above what is left.
 * - Cost: ceil(tokens × price / 10^6) per part — the prompt's uncached, cache-read and cache-write parts,
 *   each at its own price, summed into the input cost (at most the whole prompt at its dearest price);
 *   the completion at the output price.
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
  const cached = cachedParts(usage, promptTokens);
  const cost = {
    inputNano: promptCost(served.provider, promptTokens, cached),
    outputNano: tokenCost(completionTokens, served.provider.outputPriceNano),
  };
  if (limit.withinHold || estimated) withinHold(cost, limit.holdNano);
  return {
    promptTokens,
    cacheReadTokens: cached.read,
    cacheWriteTokens: cached.write,
    completionTokens,
    estimated,
    inputCostNano: cost.inputNano,
    outputCostNano: cost.outputNano,
  };
}

/** The cached parts of a prompt of `promptTokens`: as reported with the prompt's count, within it. */
function cachedParts(usage: UsageCount, promptTokens: number): { read: number; write: number } {
  if (usage.reportedPrompt === undefined) return { read: 0, write: 0 };
  const read = Math.min(usage.reportedCacheRead ?? 0, promptTokens);
  const write = Math.min(usage.reportedCacheWrite ?? 0, promptTokens - read);
  return { read, write };
}

/**
 * The input cost: ceil(tokens × price / 10^6) for the uncached, cache-read and cache-write parts, summed —
 * never above the whole prompt at the dearest prompt price (`promptPriceBound`, what the hold counts on),
 * which the parts' rounding alone could pass by a nanodollar or two.
 */
function promptCost(
  provider: Served['provider'],
  promptTokens: number,
  cached: { read: number; write: number },
): number {
  const parts =
    tokenCost(promptTokens - cached.read - cached.write, provider.inputPriceNano) +
    tokenCost(cached.read, provider.cacheReadPriceNano) +
    tokenCost(cached.write, provider.cacheWritePriceNano);
  return Math.min(parts, tokenCost(promptTokens, promptPriceBound(provider)));
}

/** Lowers a cost to at most `limitNano`, taking it off the output first (the prompt was read whole). */
export function withinHold(cost: { inputNano: number; outputNano: number }, limitNano: number): void {
  if (cost.inputNano + cost.outputNano <= limitNano) return;
  cost.inputNano = Math.min(cost.inputNano, limitNano);
  cost.outputNano = limitNano - cost.inputNano;
}
