import { badResponse, isRecord } from '../json-value.js';
import { ReasoningTally } from '../reasoning-tally.js';
import type {
  ChatResult,
  ChoiceResult,
  ProviderConfig,
  ToolCall,
  UpstreamChatRequest,
  UpstreamHttpResponse,
} from '../types.js';
import { readSuccessBody } from '../upstream-failure-from-status.js';
import { anthropicErrorReader } from './anthropic-error.js';
import { anthropicRefusalExplanation } from './anthropic-refusal-explanation.js';
import { convertAnthropicUsage } from './convert-anthropic-usage.js';
import { JSON_OBJECT_TOOL_NAME } from './json-object-tool.js';
import { mapAnthropicStopReason } from './map-anthropic-stop-reason.js';

/**
 * Reads an Anthropic Messages answer as one choice:
 * - the text is every `text` block, concatenated (`thinking` and `redacted_thinking` blocks are not
 *   text); `null` when nothing was said (no text, only tool calls);
 * - each `tool_use` block is a tool call, its `input` as JSON text;
 * - for `response_format: json_object` the forced `JSON_OBJECT_TOOL` call is the answer: its `input` as
 *   JSON text, no tool call, finish reason `stop`;
 * - the finish reason is `mapAnthropicStopReason`'s; a `refusal` stop's `stop_details.explanation`, when
 *   given, is the choice's `refusal`;
 * - usage as `convertAnthropicUsage` reads it;
 * - the thinking, apart (`reasoning`): the text of `thinking` blocks, and the size of their signatures and
 *   of `redacted_thinking` data (what the upstream generated, counted when it reports no usage).
 *
 * @see https://docs.anthropic.com/en/api/messages#response-content
 * @see https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use#handling-tool-use-and-tool-result-content-blocks
 * @see https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking
 * @see https://docs.anthropic.com/en/docs/build-with-claude/handling-stop-reasons
 */
export function parseAnthropicResponse(
  provider: ProviderConfig,
  response: UpstreamHttpResponse,
  request: UpstreamChatRequest,
): ChatResult {
  const body = readSuccessBody(response, anthropicErrorReader, { secret: provider.apiKey });
  if (!Array.isArray(body.content)) {
    throw badResponse('upstream answer has no content array', response.status);
  }
  const jsonMode = request.responseFormat?.type === 'json_object';
  let text = '';
  let json: string | undefined;
  const toolCalls: ToolCall[] = [];
  const thought = new ReasoningTally();
  for (const [index, block] of (body.content as unknown[]).entries()) {
    if (!isRecord(block)) continue;
    if (block.type === 'text' && typeof block.text === 'string') text += block.text;
    else if (block.type === 'thinking') {
      thought.text(index, block.thinking);
      thought.opaque(block.signature);
    } else if (block.type === 'redacted_thinking') thought.opaque(block.data);
    else if (block.type === 'tool_use') {
      const call = readToolUse(block, response.status);
      if (jsonMode && call.name === JSON_OBJECT_TOOL_NAME) json ??= call.arguments;
      else toolCalls.push(call);
    }
  }
  let finishReason = mapAnthropicStopReason(body.stop_reason);
  // The forced JSON tool's call is the answer, not a call for the caller to run.
  if (json !== undefined && finishReason === 'tool_calls' && toolCalls.length === 0) finishReason = 'stop';
  const choice: ChoiceResult = { text: json ?? (text === '' ? null : text), toolCalls, finishReason };
  const refusal = anthropicRefusalExplanation(body);
  if (refusal !== undefined) choice.refusal = refusal;
  const result: ChatResult = {
    choices: [choice],
    usage: convertAnthropicUsage(body.usage),
    model: typeof body.model === 'string' ? body.model : undefined,
  };
  const reasoning = thought.output();
  if (reasoning !== undefined) result.reasoning = reasoning;
  if (request.anthropic !== undefined) {
    // Passed through: the Messages door answers with the blocks as written (signatures included).
    result.anthropic = {
      id: typeof body.id === 'string' ? body.id : undefined,
      content: body.content as unknown[],
      stopReason: typeof body.stop_reason === 'string' ? body.stop_reason : null,
      stopSequence: typeof body.stop_sequence === 'string' ? body.stop_sequence : null,
      usage: isRecord(body.usage) ? body.usage : undefined,
    };
  }
  return result;
}

function readToolUse(block: Record<string, unknown>, status: number): ToolCall {
  const { id, name, input } = block;
  if (typeof id !== 'string' || typeof name !== 'string') {
    throw badResponse('upstream tool_use block has no id or name', status);
  }
  return { id, name, arguments: JSON.stringify(input ?? {}) };
}
