import { joinUrl, perProvider } from '../join-url.js';
import {
  OPENAI_ONLY_FIELDS,
  type OpenAIOnlyFields,
  type ProviderConfig,
  type UpstreamChatRequest,
  type UpstreamHttpRequest,
} from '../types.js';
import { buildGeminiGenerationConfig } from './build-gemini-generation-config.js';
import { convertGeminiTools } from './convert-gemini-tools.js';
import { convertToGeminiContents } from './convert-to-gemini-contents.js';
import type { GeminiRequestBody } from './gemini-wire-types.js';

/**
 * Builds a Gemini `generateContent` request: `POST {baseUrl}/v1beta/models/{model}:generateContent` with
 * the key in `x-goog-api-key` (never in the URL, where it would end up in logs). The body holds the
 * conversation (`convertToGeminiContents`), the tools (`convertGeminiTools`) and the settings
 * (`buildGeminiGenerationConfig`). What Gemini has no field for is left out and named, once each, in
 * `dropped`: message fields, tool settings, sampling settings, then the OpenAI-only fields
 * `OPENAI_ONLY_FIELDS` marks `drop` (the ones it marks `refuse` never get here: see `geminiRefusal`).
 *
 * With `stream`, the same body goes to `:streamGenerateContent?alt=sse` (server-sent events, each a
 * `GenerateContentResponse`) instead.
 *
 * @see https://ai.google.dev/api/generate-content#method:-models.generatecontent
 * @see https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent
 * @see https://ai.google.dev/api/generate-content#request-body
 */
export function buildGeminiRequest(
  provider: ProviderConfig,
  request: UpstreamChatRequest,
  options?: { stream?: boolean },
): UpstreamHttpRequest {
  const prompt = convertToGeminiContents(request.messages, request.model);
  const tools = convertGeminiTools(request.tools, request.toolChoice, request.parallelToolCalls);
  const generation = buildGeminiGenerationConfig(request);
  const body: GeminiRequestBody = {
    contents: prompt.contents,
    generationConfig: generation.generationConfig,
  };
  if (prompt.systemInstruction !== undefined) body.systemInstruction = prompt.systemInstruction;
  if (tools.tools !== undefined) body.tools = tools.tools;
  if (tools.toolConfig !== undefined) body.toolConfig = tools.toolConfig;
  const dropped = new Set([...prompt.dropped, ...tools.dropped, ...generation.dropped]);
  for (const field of Object.keys(OPENAI_ONLY_FIELDS) as (keyof OpenAIOnlyFields)[]) {
    if (OPENAI_ONLY_FIELDS[field] === 'drop' && request.openai[field] !== undefined) dropped.add(field);
  }
  const made = target(provider);
  const method = options?.stream === true ? STREAM : GENERATE;
  const built: UpstreamHttpRequest = {
    // The model is the provider's own on every call the gateway makes; any other is joined afresh.
    url: request.model === provider.model ? made[method] : modelUrl(provider, request.model, method),
    headers: made.headers,
    body: JSON.stringify(body),
  };
  if (dropped.size > 0) built.dropped = [...dropped];
  return built;
}

const GENERATE = ':generateContent';
const STREAM = ':streamGenerateContent?alt=sse';

function modelUrl(provider: ProviderConfig, model: string, method: typeof GENERATE | typeof STREAM): string {
  return joinUrl(provider.baseUrl, `/v1beta/models/${encodeURIComponent(model)}${method}`);
}

const target = perProvider((provider) => ({
  [GENERATE]: modelUrl(provider, provider.model, GENERATE),
  [STREAM]: modelUrl(provider, provider.model, STREAM),
  headers: Object.freeze({
    'x-goog-api-key': provider.apiKey ?? '',
    'content-type': 'application/json',
    accept: 'application/json',
  }),
}));
