import type { ResponseFormat, UpstreamChatRequest } from '../types.js';
import { geminiThinkingBudget } from './gemini-thinking-budget.js';
import type { GeminiGenerationConfig } from './gemini-wire-types.js';

export interface GeminiGenerationSetting {
  generationConfig: GeminiGenerationConfig;
  /** Sampling settings Gemini has no field for, named as OpenAI names them. */
  dropped: string[];
}

/**
 * The call's settings as Gemini's `generationConfig`:
 * - `maxOutputTokens` (per candidate), `temperature`, `topP`, `stopSequences`, `presencePenalty`,
 *   `frequencyPenalty` and `seed` under their Gemini names; `user` and `logit_bias` have no Gemini field
 *   and are reported as dropped;
 * - `n` above 1 → `candidateCount`;
 * - `response_format` `json_object` → `responseMimeType: application/json`; `json_schema` → the same plus
 *   `responseJsonSchema` (plain JSON Schema, as it came; the schema's `description`, when the caller gave
 *   one beside the schema only, is put into it). The answer's text is the JSON;
 * - `logprobs` → `responseLogprobs: true`, and `top_logprobs` → `logprobs` (alternatives per token);
 * - `reasoning_effort` → `thinkingConfig.thinkingBudget` (`geminiThinkingBudget`). Thought summaries are
 *   not asked for (`includeThoughts` stays off): an OpenAI answer has no place for them.
 *
 * @see https://ai.google.dev/api/generate-content#generationconfig
 * @see https://ai.google.dev/gemini-api/docs/structured-output
 * @see https://ai.google.dev/gemini-api/docs/thinking
 */
export function buildGeminiGenerationConfig(request: UpstreamChatRequest): GeminiGenerationSetting {
  const { params } = request;
  const dropped: string[] = [];
  const config: GeminiGenerationConfig = { maxOutputTokens: request.maxTokens };
  if (params.temperature !== undefined) config.temperature = params.temperature;
  if (params.top_p !== undefined) config.topP = params.top_p;
  if (params.stop !== undefined) config.stopSequences = params.stop;
  if (params.presence_penalty !== undefined) config.presencePenalty = params.presence_penalty;
  if (params.frequency_penalty !== undefined) config.frequencyPenalty = params.frequency_penalty;
  if (params.seed !== undefined) config.seed = params.seed;
  if (params.user !== undefined) dropped.push('user');
  if (params.logit_bias !== undefined) dropped.push('logit_bias');
  if (request.n > 1) config.candidateCount = request.n;
  applyResponseFormat(config, request.responseFormat);
  if (request.logprobs !== undefined) {
    config.responseLogprobs = true;
    if (request.logprobs.top !== undefined) config.logprobs = request.logprobs.top;
  }
  const budget = geminiThinkingBudget(request.reasoningEffort, request.maxTokens);
  if (budget !== undefined) config.thinkingConfig = { thinkingBudget: budget };
  return { generationConfig: config, dropped };
}

function applyResponseFormat(config: GeminiGenerationConfig, format: ResponseFormat | undefined): void {
  if (format === undefined || format.type === 'text') return;
  config.responseMimeType = 'application/json';
  if (format.type !== 'json_schema' || format.schema === undefined) return;
  const described =
    format.description !== undefined && format.description !== '' && format.schema.description === undefined;
  config.responseJsonSchema = described
    ? { ...format.schema, description: format.description }
    : format.schema;
}
