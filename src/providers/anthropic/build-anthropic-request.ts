import { joinUrl, perProvider } from '../join-url.js';
import { isRecord } from '../json-value.js';
import {
  type AnthropicPassThrough,
  OPENAI_ONLY_FIELDS,
  type OpenAIOnlyFields,
  type ProviderConfig,
  type UpstreamChatRequest,
  type UpstreamHttpRequest,
} from '../types.js';
import { convertAnthropicThinking, MIN_THINKING_BUDGET } from './convert-anthropic-thinking.js';
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
  if (request.anthropic !== undefined)
    return passThroughRequest(provider, request, request.anthropic, options);
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

/**
 * A Messages request passed through (the Messages door): the client's body as sent, with the model, the
 * completion cap the hold pays for (`max_tokens`, never above the client's) and `stream` set by Tollgate;
 * a thinking budget the lowered cap leaves no room for is lowered below it (Anthropic wants
 * `budget_tokens` < `max_tokens`). The allowed `anthropic-beta` values go as that header.
 */
function passThroughRequest(
  provider: ProviderConfig,
  request: UpstreamChatRequest,
  passThrough: AnthropicPassThrough,
  options: { stream?: boolean } | undefined,
): UpstreamHttpRequest {
  const body: Record<string, unknown> = {
    ...passThrough.body,
    model: request.model,
    max_tokens: request.maxTokens,
  };
  if (options?.stream === true) body.stream = true;
  else delete body.stream;
  const { thinking } = body;
  if (
    isRecord(thinking) &&
    thinking.type === 'enabled' &&
    typeof thinking.budget_tokens === 'number' &&
    thinking.budget_tokens >= request.maxTokens
  ) {
    body.thinking = { ...thinking, budget_tokens: Math.max(MIN_THINKING_BUDGET, request.maxTokens - 1) };
  }
  const { url, headers } = target(provider);
  const withBetas =
    passThrough.betas.length === 0 ? headers : { ...headers, 'anthropic-beta': passThrough.betas.join(',') };
  return { url, headers: withBetas, body: JSON.stringify(body) };
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
