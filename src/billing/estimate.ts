import type { ChatMessage, ProviderConfig } from '../providers/types.js';
import { maxTokensFor, tokenCost } from './money.js';

/** Chat-template overhead upstreams count beyond the text (DESIGN.md "Holds"). */
export const TOKENS_PER_MESSAGE = 8;
export const TOKENS_PER_REQUEST = 16;

/**
 * An upper bound of the prompt's token count in O(bytes), without a tokenizer: a BPE token is at least
 * one byte of UTF-8, so the byte count bounds the text's tokens; the template overhead is added on top.
 */
export function promptTokenUpperBound(messages: readonly ChatMessage[]): number {
  let bytes = 0;
  for (const m of messages) bytes += Buffer.byteLength(m.content, 'utf8');
  return bytes + TOKENS_PER_MESSAGE * messages.length + TOKENS_PER_REQUEST;
}

export interface HoldPlanInput {
  promptTokensBound: number;
  /** The caller's explicit completion cap, if any. */
  requestedMaxTokens: number | undefined;
  minCompletionTokens: number;
}

/** The upper-bound cost of one call to `provider` with completion cap `cap`. */
export function callCostBound(provider: ProviderConfig, promptTokensBound: number, cap: number): number {
  return tokenCost(promptTokensBound, provider.inputPriceNano) + tokenCost(cap, provider.outputPriceNano);
}

/** The completion cap a call to `provider` would like: the caller's, or the provider's default. */
export function desiredCap(provider: ProviderConfig, requestedMaxTokens: number | undefined): number {
  return requestedMaxTokens ?? provider.defaultMaxTokens;
}

/**
 * The completion cap to send to `provider` when `holdNano` is what is held: the desired cap, lowered to
 * what the hold can pay for. Returns undefined when the hold cannot pay for a useful call (the caller's
 * explicit cap is never lowered; otherwise `minCompletionTokens` is the floor).
 */
export function capWithinHold(
  provider: ProviderConfig,
  holdNano: number,
  input: HoldPlanInput,
): number | undefined {
  const want = desiredCap(provider, input.requestedMaxTokens);
  const inputCost = tokenCost(input.promptTokensBound, provider.inputPriceNano);
  const affordable = maxTokensFor(holdNano - inputCost, provider.outputPriceNano);
  const cap = Math.min(want, affordable);
  const floor = input.requestedMaxTokens ?? Math.min(input.minCompletionTokens, want);
  return cap >= floor ? cap : undefined;
}

/**
 * What to try to hold for a route: the most any of its candidates could cost at its desired cap, so a
 * failover never needs more money than is already held.
 */
export function fullHoldFor(candidates: readonly ProviderConfig[], input: HoldPlanInput): number {
  let max = 0;
  for (const c of candidates) {
    max = Math.max(max, callCostBound(c, input.promptTokensBound, desiredCap(c, input.requestedMaxTokens)));
  }
  return max;
}
