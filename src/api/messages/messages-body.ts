import type { ChatCompletion } from '../../gateway/types.js';
import type { FinishReason } from '../../providers/types.js';
import { billOf } from '../chat-completion-body.js';

/** Anthropic's stop reason for a neutral finish reason. */
export function stopReasonOf(reason: FinishReason): string {
  switch (reason) {
    case 'length':
      return 'max_tokens';
    case 'tool_calls':
      return 'tool_use';
    case 'content_filter':
      return 'refusal';
    case 'stop':
      return 'end_turn';
  }
}

/**
 * The `usage` the client is told: the upstream's own object when the request was passed through and the
 * upstream reported it (what was billed); otherwise the billed counts in Anthropic's fields, the cache
 * reads apart from the rest of the prompt.
 */
export function usageOf(c: ChatCompletion): Record<string, unknown> {
  if (c.anthropic?.usage !== undefined && !c.usageEstimated) return c.anthropic.usage;
  const cached = c.cachedPromptTokens ?? 0;
  return {
    input_tokens: c.promptTokens - cached,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: cached,
    output_tokens: c.completionTokens,
  };
}

function inputOf(args: string): unknown {
  try {
    return JSON.parse(args) as unknown;
  } catch {
    return {};
  }
}

/** The content blocks of a neutral answer: its text, then its tool calls. */
function contentOf(c: ChatCompletion): unknown[] {
  const choice = c.choices[0];
  if (choice === undefined) return [];
  const blocks: unknown[] = [];
  const said = choice.text ?? choice.refusal;
  if (said !== null && said !== undefined && said !== '') blocks.push({ type: 'text', text: said });
  for (const call of choice.toolCalls) {
    blocks.push({ type: 'tool_use', id: call.id, name: call.name, input: inputOf(call.arguments) });
  }
  return blocks;
}

/** The message id the client sees: the upstream's when passed through, else one from the request id. */
export function messageIdOf(c: Pick<ChatCompletion, 'id' | 'anthropic'>): string {
  return c.anthropic?.id ?? `msg_${c.id.replace(/^chatcmpl-/, '')}`;
}

/**
 * The Messages answer body (`type: "message"`), with Tollgate's `meta` (provider, cost, balance) as on
 * the chat door. A passed-through answer keeps the upstream's content blocks as written.
 */
export function messagesBody(c: ChatCompletion): Record<string, unknown> {
  const passed = c.anthropic;
  const finish = c.choices[0]?.finishReason ?? 'stop';
  return {
    id: messageIdOf(c),
    type: 'message',
    role: 'assistant',
    model: c.model,
    content: passed?.content ?? contentOf(c),
    stop_reason: passed?.stopReason ?? stopReasonOf(finish),
    stop_sequence: passed?.stopSequence ?? null,
    usage: usageOf(c),
    meta: billOf(c).meta,
  };
}
