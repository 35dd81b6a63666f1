import { joinUrl, perProvider } from '../join-url.js';
import type { ProviderConfig, UpstreamChatRequest, UpstreamHttpRequest } from '../types.js';
import { convertToGeminiContents } from './convert-to-gemini-contents.js';

/**
 * Builds a Gemini `generateContent` request: `POST {baseUrl}/v1beta/models/{model}:generateContent` with
 * the key in `x-goog-api-key` (never in the URL, where it would end up in logs). Sampling settings go to
 * `generationConfig`; `user` has no Gemini field and is reported as a warning.
 *
 * @see https://ai.google.dev/api/generate-content#method:-models.generatecontent
 * @see https://ai.google.dev/api/generate-content#generationconfig
 */
export function buildGeminiRequest(
  provider: ProviderConfig,
  request: UpstreamChatRequest,
): UpstreamHttpRequest {
  const { params } = request;
  const warnings: string[] = [];
  const prompt = convertToGeminiContents(request.messages);
  const generationConfig: Record<string, unknown> = { maxOutputTokens: request.maxTokens };
  if (params.temperature !== undefined) generationConfig.temperature = params.temperature;
  if (params.top_p !== undefined) generationConfig.topP = params.top_p;
  if (params.stop !== undefined) generationConfig.stopSequences = params.stop;
  if (params.presence_penalty !== undefined) generationConfig.presencePenalty = params.presence_penalty;
  if (params.frequency_penalty !== undefined) generationConfig.frequencyPenalty = params.frequency_penalty;
  if (params.seed !== undefined) generationConfig.seed = params.seed;
  if (params.user !== undefined) warnings.push('user is not supported by Gemini');
  const body: Record<string, unknown> = { contents: prompt.contents };
  if (prompt.systemInstruction !== undefined) body.systemInstruction = prompt.systemInstruction;
  body.generationConfig = generationConfig;
  const made = target(provider);
  const built: UpstreamHttpRequest = {
    // The model is the provider's own on every call the gateway makes; any other is joined afresh.
    url: request.model === provider.model ? made.url : modelUrl(provider, request.model),
    headers: made.headers,
    body: JSON.stringify(body),
  };
  if (warnings.length > 0) built.warnings = warnings;
  return built;
}

function modelUrl(provider: ProviderConfig, model: string): string {
  return joinUrl(provider.baseUrl, `/v1beta/models/${encodeURIComponent(model)}:generateContent`);
}

const target = perProvider((provider) => ({
  url: modelUrl(provider, provider.model),
  headers: Object.freeze({
    'x-goog-api-key': provider.apiKey ?? '',
    'content-type': 'application/json',
    accept: 'application/json',
  }),
}));
