import { joinUrl, perProvider } from '../join-url.js';
import {
  OPENAI_ONLY_FIELDS,
  type OpenAIOnlyFields,
  type ProviderConfig,
  type UpstreamChatRequest,
  type UpstreamHttpRequest,
} from '../types.js';
import { convertAnthropicThinking } from './convert-anthropic-thinking.js';
import { convertAnthropicTools } from './convert-anthropic-tools.js';
import { convertToAnthropicMessages } from './convert-to-anthropic-messages.js';

/** The Messages API version this adapter speaks. */
export const ANTHROPIC_VERSION = '2023-06-01';

/**
 * Builds an Anthropic Messages request: `POST {baseUrl}/v1/messages` with `x-api-key` (no bearer
 * header). The conversation goes through `convertToAnthropicMessages`, tools and JSON mode through
 * `convertAnthropicTools`, `reasoning_effort` through `convertAnthropicThinking`;
 * `response_format: json_schema` becomes `output_config.format` (structured outputs: the answer's text is
 * the JSON). `stop` becomes `stop_sequences` and `user` becomes `metadata.user_id`.
 *
 * Left out and named in `dropped`: `presence_penalty`, `frequency_penalty`, `seed` and `logit_bias` (no
 * Anthropic field); `top_p` given with `temperature` (recent Claude models refuse both together);
 * `temperature` and `top_p` when thinking is on (Anthropic refuses changes to them then);
 * `reasoning_effort` when thinking cannot be turned on; a json_schema `description`; the OpenAI-only
 * fields `OPENAI_ONLY_FIELDS` marks `drop`; and the message fields the conversation lost.
 *
 * With `stream`, the body adds `stream: true` (server-sent events; the usage comes in them unasked).
 *
 * @see https://docs.anthropic.com/en/api/messages
 * @see https://docs.anthropic.com/en/docs/build-with-claude/streaming
 * @see https://docs.anthropic.com/en/api/versioning
 * @see https://docs.anthropic.com/en/docs/build-with-claude/structured-outputs
 * @see https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking#feature-compatibility
 */
export function buildAnthropicRequest(
  provider: ProviderConfig,
  request: UpstreamChatRequest,
  options?: { stream?: boolean },
): UpstreamHttpRequest {
  const { params } = request;
  const prompt = convertToAnthropicMessages(request.messages);
  const dropped = new Set<string>(prompt.dropped);
  const body: Record<string, unknown> = { model: request.model, max_tokens: request.maxTokens };
  if (prompt.system !== undefined) body.system = prompt.system;
  body.messages = prompt.messages;

  Object.assign(
    body,
    convertAnthropicTools(
      request.tools,
      request.toolChoice,
      request.parallelToolCalls,
      request.responseFormat,
    ),
  );
  const format = request.responseFormat;
  if (format?.type === 'json_schema') {
    body.output_config = { format: { type: 'json_schema', schema: format.schema ?? { type: 'object' } } };
    if (format.description !== undefined) dropped.add('response_format.json_schema.description');
  }

  const { thinking, dropped: effortDropped } = convertAnthropicThinking(
    request.reasoningEffort,
    request.maxTokens,
    prompt.messages,
  );
  if (thinking !== undefined) body.thinking = thinking;
  if (effortDropped) dropped.add('reasoning_effort');

  if (params.temperature !== undefined) {
    if (thinking === undefined) body.temperature = params.temperature;
    else dropped.add('temperature');
  }
  if (params.top_p !== undefined) {
    if (thinking === undefined && params.temperature === undefined) body.top_p = params.top_p;
    else dropped.add('top_p');
  }
  if (params.stop !== undefined && params.stop.length > 0) body.stop_sequences = params.stop;
  if (params.user !== undefined) body.metadata = { user_id: params.user };
  for (const field of ['presence_penalty', 'frequency_penalty', 'seed', 'logit_bias'] as const) {
    if (params[field] !== undefined) dropped.add(field);
  }
  for (const field of Object.keys(OPENAI_ONLY_FIELDS) as (keyof OpenAIOnlyFields)[]) {
    if (OPENAI_ONLY_FIELDS[field] === 'drop' && request.openai[field] !== undefined) dropped.add(field);
  }

  if (options?.stream === true) body.stream = true;

  const { url, headers } = target(provider);
  const built: UpstreamHttpRequest = { url, headers, body: JSON.stringify(body) };
  if (dropped.size > 0) built.dropped = [...dropped];
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
