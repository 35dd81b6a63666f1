import { indexWithin } from '../answer-index.js';
import { badResponse, isRecord } from '../json-value.js';
import { ReasoningTally } from '../reasoning-tally.js';
import type { ChatResult, ProviderConfig, UpstreamChatRequest, UpstreamHttpResponse } from '../types.js';
import { readSuccessBody } from '../upstream-failure-from-status.js';
import { convertOpenAIUsage } from './convert-openai-usage.js';
import { openaiErrorReader } from './openai-error.js';
import { parseOpenAIChoice } from './parse-openai-choice.js';
import { readOpenAIReasoning } from './read-openai-reasoning.js';

/**
 * Reads an OpenAI-compatible chat completion: one choice per `choices[]` element, in the order of their
 * `index` (`parseOpenAIChoice`), the usage (`convertOpenAIUsage`), the model that served the call, and the
 * reasoning of the messages (`readOpenAIReasoning`), which is not part of the answer. An
 * answer with no choice at all cannot be read (`bad_response`, tried elsewhere).
 *
 * @see https://platform.openai.com/docs/api-reference/chat/object
 */
export function parseOpenAIResponse(
  provider: ProviderConfig,
  response: UpstreamHttpResponse,
  request: UpstreamChatRequest,
): ChatResult {
  const body = readSuccessBody(response, openaiErrorReader, { secret: provider.apiKey });
  const { choices } = body;
  if (!Array.isArray(choices) || choices.length === 0) {
    throw badResponse('upstream answer has no choices', response.status);
  }
  const logprobsRequested = request.logprobs !== undefined;
  const responseId = typeof body.id === 'string' ? body.id : undefined;
  const turn = request.messages.length;
  const ordered = inIndexOrder(choices as unknown[], request.n);
  const result: ChatResult = {
    choices: ordered.map((choice, position) =>
      parseOpenAIChoice(choice, { responseId, turn, choice: position }, logprobsRequested, response.status),
    ),
    usage: convertOpenAIUsage(body.usage),
    model: typeof body.model === 'string' ? body.model : undefined,
  };
  const thought = new ReasoningTally();
  ordered.forEach((choice, position) => {
    if (isRecord(choice)) readOpenAIReasoning(choice.message, position, thought);
  });
  const reasoning = thought.output();
  if (reasoning !== undefined) result.reasoning = reasoning;
  return result;
}

/**
 * The choices sorted by their `index` (OpenAI sends them in order; nothing says every compatible server
 * does). A choice without an index keeps its place in the list; one numbered (or placed) at or beyond the
 * `n` choices asked for is the upstream's fault (`indexWithin`).
 */
function inIndexOrder(choices: unknown[], n: number): unknown[] {
  const keyed = choices.map((choice, position) => ({
    choice,
    key: indexWithin(isRecord(choice) ? choice.index : undefined, position, n, 'choice'),
  }));
  if (keyed.length === 1) return choices;
  return keyed.sort((a, b) => a.key - b.key).map(({ choice }) => choice);
}
