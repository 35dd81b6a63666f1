import { badResponse, isRecord } from '../json-value.js';
import type { ChatResult, ProviderConfig, UpstreamHttpResponse } from '../types.js';
import { readSuccessBody } from '../upstream-failure-from-status.js';
import { anthropicErrorReader } from './anthropic-error.js';
import { convertAnthropicUsage } from './convert-anthropic-usage.js';
import { mapAnthropicStopReason } from './map-anthropic-stop-reason.js';

/**
 * Reads an Anthropic Messages answer: the text is every `content[]` block of type `text`, concatenated
 * (thinking and tool-use blocks are not text).
 *
 * @see https://docs.anthropic.com/en/api/messages#response-content
 */
export function parseAnthropicResponse(provider: ProviderConfig, response: UpstreamHttpResponse): ChatResult {
  const body = readSuccessBody(response, anthropicErrorReader, { secret: provider.apiKey });
  if (!Array.isArray(body.content))
    throw badResponse('upstream answer has no content array', response.status);
  const text = body.content
    .map((block: unknown) =>
      isRecord(block) && block.type === 'text' && typeof block.text === 'string' ? block.text : '',
    )
    .join('');
  return {
    text,
    finishReason: mapAnthropicStopReason(body.stop_reason),
    usage: convertAnthropicUsage(body.usage),
    model: typeof body.model === 'string' ? body.model : undefined,
  };
}
