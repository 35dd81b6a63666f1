import { badResponse, isRecord, readTokenCount } from '../json-value.js';
import type { ChatResult, ProviderConfig, UpstreamHttpResponse, UpstreamUsage } from '../types.js';
import { readSuccessBody } from '../upstream-failure-from-status.js';
import { mapOpenAIFinishReason } from './map-openai-finish-reason.js';
import { openaiErrorReader } from './openai-error.js';

/**
 * Reads an OpenAI-compatible chat completion: `choices[0].message.content`, its `finish_reason`, and
 * `usage.prompt_tokens` / `usage.completion_tokens` (absent usage stays `undefined`).
 *
 * @see https://platform.openai.com/docs/api-reference/chat/object
 */
export function parseOpenAIResponse(provider: ProviderConfig, response: UpstreamHttpResponse): ChatResult {
  const body = readSuccessBody(response, openaiErrorReader, { secret: provider.apiKey });
  const choices = body.choices;
  const choice = Array.isArray(choices) ? (choices[0] as unknown) : undefined;
  if (!isRecord(choice) || !isRecord(choice.message)) {
    throw badResponse('upstream answer has no choices[0].message', response.status);
  }
  return {
    text: readOpenAIContent(choice.message.content, response.status),
    finishReason: mapOpenAIFinishReason(choice.finish_reason),
    usage: convertOpenAIUsage(body.usage),
    model: typeof body.model === 'string' ? body.model : undefined,
  };
}

/** `content` is a string, `null` (nothing said) or, from some compatible upstreams, an array of parts. */
function readOpenAIContent(content: unknown, status: number): string {
  if (typeof content === 'string') return content;
  if (content === null || content === undefined) return '';
  if (Array.isArray(content)) {
    return content
      .map((part: unknown) =>
        isRecord(part) && part.type === 'text' && typeof part.text === 'string' ? part.text : '',
      )
      .join('');
  }
  throw badResponse('upstream choices[0].message.content is neither text nor parts', status);
}

/**
 * @see https://platform.openai.com/docs/api-reference/chat/object#chat/object-usage
 */
export function convertOpenAIUsage(usage: unknown): UpstreamUsage {
  if (usage === undefined || usage === null) return { promptTokens: undefined, completionTokens: undefined };
  if (!isRecord(usage)) throw badResponse('upstream usage is not an object');
  return {
    promptTokens: readTokenCount(usage, 'prompt_tokens'),
    completionTokens: readTokenCount(usage, 'completion_tokens'),
  };
}
