import type { ProviderConfig, Refusal, UpstreamCallSpec } from '../types.js';

/**
 * The OpenAI-compatible format refuses nothing: every setting of a call is an OpenAI field and goes to the
 * upstream under its own name. A host that does not support one answers 400 with its own message, which
 * the gateway passes on to the caller as `upstream_rejected`, as a client of that host would see it: Groq,
 * for one, refuses `logprobs`, `top_logprobs`, `logit_bias`, `messages[].name` and any `n` but 1, and
 * each host takes its own set of `reasoning_effort` values.
 *
 * @see https://console.groq.com/docs/openai#currently-unsupported-openai-features
 */
export function openaiRefusal(_provider: ProviderConfig, _spec: UpstreamCallSpec): Refusal | undefined {
  return undefined;
}
