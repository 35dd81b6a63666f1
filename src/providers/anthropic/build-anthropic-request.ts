import { joinUrl, perProvider } from '../join-url.js';
import type { ProviderConfig, UpstreamChatRequest, UpstreamHttpRequest } from '../types.js';
import { convertToAnthropicMessages } from './convert-to-anthropic-messages.js';

/** The Messages API version this adapter speaks. */
export const ANTHROPIC_VERSION = '2023-06-01';

/**
 * Builds an Anthropic Messages request: `POST {baseUrl}/v1/messages` with `x-api-key` (no bearer
 * header). `stop` becomes `stop_sequences` and `user` becomes `metadata.user_id`; presence/frequency
 * penalties and `seed` have no Anthropic field and are reported as warnings. Recent Claude models refuse
 * `temperature` and `top_p` together, so when both are given only `temperature` is sent, with a warning.
 *
 * @see https://docs.anthropic.com/en/api/messages
 * @see https://docs.anthropic.com/en/api/versioning
 */
export function buildAnthropicRequest(
  provider: ProviderConfig,
  request: UpstreamChatRequest,
): UpstreamHttpRequest {
  const { params } = request;
  const warnings: string[] = [];
  const prompt = convertToAnthropicMessages(request.messages);
  const body: Record<string, unknown> = { model: request.model, max_tokens: request.maxTokens };
  if (prompt.system !== undefined) body.system = prompt.system;
  body.messages = prompt.messages;
  if (params.temperature !== undefined) body.temperature = params.temperature;
  if (params.top_p !== undefined) {
    if (params.temperature === undefined) body.top_p = params.top_p;
    else warnings.push('top_p is not sent to Anthropic together with temperature; only temperature was sent');
  }
  if (params.stop !== undefined) body.stop_sequences = params.stop;
  if (params.user !== undefined) body.metadata = { user_id: params.user };
  if (params.presence_penalty !== undefined) warnings.push('presence_penalty is not supported by Anthropic');
  if (params.frequency_penalty !== undefined)
    warnings.push('frequency_penalty is not supported by Anthropic');
  if (params.seed !== undefined) warnings.push('seed is not supported by Anthropic');
  const { url, headers } = target(provider);
  const built: UpstreamHttpRequest = { url, headers, body: JSON.stringify(body) };
  if (warnings.length > 0) built.warnings = warnings;
  return built;
}

const target = perProvider((provider) => ({
  url: joinUrl(provider.baseUrl, '/v1/messages'),
  headers: Object.freeze({
    'x-api-key': provider.apiKey ?? '',
    'anthropic-version': ANTHROPIC_VERSION,
    'content-type': 'application/json',
    accept: 'application/json',
  }),
}));
