import { joinUrl } from '../join-url.js';
import { badResponse } from '../json-value.js';
import type {
  ProviderConfig,
  UpstreamCallSpec,
  UpstreamHttpRequest,
  UpstreamHttpResponse,
} from '../types.js';
import { readSuccessBody } from '../upstream-failure-from-status.js';
import { anthropicErrorReader } from './anthropic-error.js';
import { ANTHROPIC_VERSION } from './build-anthropic-request.js';

/** The fields of a Messages request that Anthropic's token count reads (the rest does not change it). */
const COUNTED_FIELDS = [
  'messages',
  'system',
  'tools',
  'tool_choice',
  'thinking',
  'context_management',
  'output_config',
] as const;

/**
 * Anthropic's own prompt count of a Messages request passed through (`POST {baseUrl}/v1/messages/count_tokens`,
 * free of charge): the counted fields of the client's body as sent, with the upstream's model and the
 * allowed `anthropic-beta` values. Undefined for a request that did not come through the Messages door.
 *
 * @see https://docs.anthropic.com/en/api/messages-count-tokens
 */
export function buildAnthropicCountRequest(
  provider: ProviderConfig,
  request: UpstreamCallSpec,
): UpstreamHttpRequest | undefined {
  const passThrough = request.anthropic;
  if (passThrough === undefined) return undefined;
  const body: Record<string, unknown> = { model: request.model };
  for (const field of COUNTED_FIELDS) {
    if (passThrough.body[field] !== undefined) body[field] = passThrough.body[field];
  }
  const headers: Record<string, string> = {
    'x-api-key': provider.apiKey ?? '',
    'anthropic-version': ANTHROPIC_VERSION,
    'content-type': 'application/json',
    accept: 'application/json',
  };
  if (passThrough.betas.length > 0) headers['anthropic-beta'] = passThrough.betas.join(',');
  return {
    url: joinUrl(provider.baseUrl, '/v1/messages/count_tokens'),
    headers,
    body: JSON.stringify(body),
  };
}

/** The count of an answer to `buildAnthropicCountRequest`; throws `UpstreamError` when there is none. */
export function parseAnthropicCount(provider: ProviderConfig, response: UpstreamHttpResponse): number {
  const body = readSuccessBody(response, anthropicErrorReader, { secret: provider.apiKey });
  const count = body.input_tokens;
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 0) {
    throw badResponse('upstream token count has no input_tokens', response.status);
  }
  return count;
}
