import { joinUrl, perProvider } from '../join-url.js';
import {
  OPENAI_ONLY_FIELDS,
  type OpenAIOnlyFields,
  type ProviderConfig,
  type UpstreamChatRequest,
  type UpstreamHttpRequest,
} from '../types.js';
import { convertToOpenAIMessages } from './convert-to-openai-messages.js';
import { convertToOpenAIResponseFormat } from './convert-to-openai-response-format.js';
import { convertToOpenAIToolChoice, convertToOpenAITools } from './convert-to-openai-tools.js';
import type { OpenAIChatRequestBody } from './openai-wire-types.js';

/**
 * Builds an OpenAI Chat Completions request, the wire format DeepSeek, Qwen (DashScope compatible mode),
 * Kimi (Moonshot), Groq and Mistral all accept: `POST {baseUrl}/chat/completions` with a bearer key.
 *
 * The format is OpenAI's own, so every setting of the call is sent, rebuilt from the normalised request
 * under its OpenAI name: the messages (`convertToOpenAIMessages`), `max_tokens` (the cap the hold covers,
 * per choice), `stream`, each sampling parameter the caller set, `n` (only above 1), `logprobs` and
 * `top_logprobs`, `tools`, `tool_choice`, `parallel_tool_calls`, `response_format`, `reasoning_effort` and
 * each OpenAI-only field (`metadata`, `store`, `service_tier`, …). Nothing is dropped, so `dropped` is
 * never set; a host that lacks a field says so itself (see `openaiRefusal`).
 *
 * With `stream`, the body asks for server-sent events (`stream: true`) and always for the usage chunk that
 * ends them (`stream_options.include_usage`), whatever the caller asked: the gateway bills from it.
 *
 * @see https://platform.openai.com/docs/api-reference/chat/create
 * @see https://platform.openai.com/docs/api-reference/chat/create#chat-create-stream_options
 * @see https://api-docs.deepseek.com/api/create-chat-completion
 * @see https://console.groq.com/docs/api-reference#chat-create
 * @see https://docs.mistral.ai/api/#tag/chat/operation/chat_completion_v1_chat_completions_post
 */
export function buildOpenAIRequest(
  provider: ProviderConfig,
  request: UpstreamChatRequest,
  options?: { stream?: boolean },
): UpstreamHttpRequest {
  const { params } = request;
  const stream = options?.stream === true;
  const body: OpenAIChatRequestBody = {
    model: request.model,
    messages: convertToOpenAIMessages(request.messages),
    max_tokens: request.maxTokens,
    stream,
  };
  if (stream) body.stream_options = { include_usage: true };
  if (params.temperature !== undefined) body.temperature = params.temperature;
  if (params.top_p !== undefined) body.top_p = params.top_p;
  if (params.stop !== undefined) body.stop = params.stop;
  if (params.presence_penalty !== undefined) body.presence_penalty = params.presence_penalty;
  if (params.frequency_penalty !== undefined) body.frequency_penalty = params.frequency_penalty;
  if (params.seed !== undefined) body.seed = params.seed;
  if (params.user !== undefined) body.user = params.user;
  if (params.logit_bias !== undefined) body.logit_bias = params.logit_bias;
  if (request.n > 1) body.n = request.n;
  if (request.logprobs !== undefined) {
    body.logprobs = true;
    if (request.logprobs.top !== undefined) body.top_logprobs = request.logprobs.top;
  }
  if (request.tools !== undefined) body.tools = convertToOpenAITools(request.tools);
  if (request.toolChoice !== undefined) body.tool_choice = convertToOpenAIToolChoice(request.toolChoice);
  if (request.parallelToolCalls !== undefined) body.parallel_tool_calls = request.parallelToolCalls;
  if (request.responseFormat !== undefined) {
    body.response_format = convertToOpenAIResponseFormat(request.responseFormat);
  }
  if (request.reasoningEffort !== undefined) body.reasoning_effort = request.reasoningEffort;
  for (const field of OPENAI_ONLY_FIELD_NAMES) copyField(body, request.openai, field);
  const { url, headers } = target(provider);
  return { url, headers, body: JSON.stringify(body) };
}

/** Every OpenAI-only field, as `OPENAI_ONLY_FIELDS` lists them (the one list the formats share). */
const OPENAI_ONLY_FIELD_NAMES = Object.freeze(Object.keys(OPENAI_ONLY_FIELDS) as (keyof OpenAIOnlyFields)[]);

function copyField<K extends keyof OpenAIOnlyFields>(
  body: OpenAIOnlyFields,
  fields: OpenAIOnlyFields,
  name: K,
): void {
  const value = fields[name];
  if (value !== undefined) body[name] = value;
}

const target = perProvider((provider) => ({
  url: joinUrl(provider.baseUrl, '/chat/completions'),
  headers: Object.freeze({
    authorization: `Bearer ${provider.apiKey ?? ''}`,
    'content-type': 'application/json',
    accept: 'application/json',
  }),
}));
