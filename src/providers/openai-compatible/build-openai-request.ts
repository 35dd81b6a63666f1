import { joinUrl, perProvider } from '../join-url.js';
import type { ProviderConfig, UpstreamChatRequest, UpstreamHttpRequest } from '../types.js';

/**
 * Builds an OpenAI Chat Completions request, the wire format DeepSeek, Qwen (DashScope compatible mode),
 * Kimi (Moonshot), Groq and Mistral all accept: `POST {baseUrl}/chat/completions` with a bearer key.
 * Every sampling setting we take is an OpenAI field, so nothing needs a warning here.
 *
 * @see https://platform.openai.com/docs/api-reference/chat/create
 * @see https://api-docs.deepseek.com/api/create-chat-completion
 * @see https://console.groq.com/docs/api-reference#chat-create
 * @see https://docs.mistral.ai/api/#tag/chat/operation/chat_completion_v1_chat_completions_post
 */
export function buildOpenAIRequest(
  provider: ProviderConfig,
  request: UpstreamChatRequest,
): UpstreamHttpRequest {
  const { params } = request;
  const body: Record<string, unknown> = {
    model: request.model,
    messages: request.messages.map((message) => ({ role: message.role, content: message.content })),
    max_tokens: request.maxTokens,
    stream: false,
  };
  if (params.temperature !== undefined) body.temperature = params.temperature;
  if (params.top_p !== undefined) body.top_p = params.top_p;
  if (params.stop !== undefined) body.stop = params.stop;
  if (params.presence_penalty !== undefined) body.presence_penalty = params.presence_penalty;
  if (params.frequency_penalty !== undefined) body.frequency_penalty = params.frequency_penalty;
  if (params.seed !== undefined) body.seed = params.seed;
  if (params.user !== undefined) body.user = params.user;
  const { url, headers } = target(provider);
  return { url, headers, body: JSON.stringify(body) };
}

const target = perProvider((provider) => ({
  url: joinUrl(provider.baseUrl, '/chat/completions'),
  headers: Object.freeze({
    authorization: `Bearer ${provider.apiKey ?? ''}`,
    'content-type': 'application/json',
    accept: 'application/json',
  }),
}));
