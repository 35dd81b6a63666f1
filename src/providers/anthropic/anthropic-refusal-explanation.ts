import { isRecord } from '../json-value.js';

/**
 * The explanation of a `refusal` stop, when Anthropic gives one: `stop_details.explanation` beside
 * `stop_reason` (on an answer, and on a stream's `message_delta.delta`); `undefined` for any other stop.
 *
 * @see https://docs.anthropic.com/en/docs/test-and-evaluate/strengthen-guardrails/handle-streaming-refusals
 */
export function anthropicRefusalExplanation(source: Record<string, unknown>): string | undefined {
  if (source.stop_reason !== 'refusal' || !isRecord(source.stop_details)) return undefined;
  const { explanation } = source.stop_details;
  return typeof explanation === 'string' && explanation !== '' ? explanation : undefined;
}
