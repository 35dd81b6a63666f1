import type { GatewayError } from '../../errors.js';
import type { ChatCompletion } from '../../gateway/types.js';
import type { FinishReason, ToolCall } from '../../providers/types.js';
import { billOf } from '../chat-completion-body.js';
import type { ResponsesEcho, ResponsesRequest } from './read-request.js';

type Json = Record<string, unknown>;

export type ItemStatus = 'in_progress' | 'completed' | 'incomplete';
export type ResponseStatus = 'in_progress' | 'completed' | 'incomplete' | 'failed';

/** What every `response` object of one request shares: its id, time, model and the echoed request. */
export interface ResponseFrame {
  id: string;
  /** Unix seconds. */
  createdAt: number;
  model: string;
  echo: ResponsesEcho;
}

/** `resp_` + the request id's own characters, so a response names the usage row it was billed in. */
export function responseIdOf(requestId: string): string {
  return `resp_${requestId.replace(/^chatcmpl-/, '')}`;
}

/** An output item's id: its kind, the response's characters and its place in `output`. */
export function itemIdOf(kind: 'msg' | 'fc', responseId: string, outputIndex: number): string {
  return `${kind}_${responseId.replace(/^resp_/, '')}_${outputIndex}`;
}

export function outputTextPart(text: string): Json {
  return { type: 'output_text', text, annotations: [], logprobs: [] };
}

export function refusalPart(refusal: string): Json {
  return { type: 'refusal', refusal };
}

export function messageItem(id: string, content: Json[], status: ItemStatus): Json {
  return { type: 'message', id, status, role: 'assistant', content };
}

/** A function call as the caller offered it: a namespace function keeps its namespace and own name. */
export function functionCallItem(
  id: string,
  call: { id: string; name: string; arguments: string },
  namespaced: ResponsesRequest['namespaced'],
  status: ItemStatus,
): Json {
  const ns = namespaced.get(call.name);
  const item: Json = { type: 'function_call', id, call_id: call.id, name: ns?.name ?? call.name };
  if (ns !== undefined) item.namespace = ns.namespace;
  item.arguments = call.arguments;
  item.status = status;
  return item;
}

/** Responses' `usage` of a billed call (with `cost`, as on the chat door), and Tollgate's `meta`. */
export function usageOf(c: ChatCompletion): { usage: Json; meta: Json } {
  const { usage, meta } = billOf(c);
  return {
    usage: {
      input_tokens: c.promptTokens,
      input_tokens_details: { cached_tokens: c.cachedPromptTokens ?? 0 },
      output_tokens: c.completionTokens,
      output_tokens_details: { reasoning_tokens: c.reasoningTokens ?? 0 },
      total_tokens: c.promptTokens + c.completionTokens,
      cost: usage.cost,
    },
    meta,
  };
}

/** Why an answer that ended on `finish` is incomplete, or null when it is complete. */
export function incompleteReasonOf(finish: FinishReason | undefined): string | null {
  if (finish === 'length') return 'max_output_tokens';
  if (finish === 'content_filter') return 'content_filter';
  return null;
}

/** A `response` object in any state: `completion` (the call as billed) adds `usage` and `meta`. */
export function responseObject(
  frame: ResponseFrame,
  state: {
    status: ResponseStatus;
    output: Json[];
    completion?: ChatCompletion;
    incompleteReason?: string | null;
    error?: GatewayError;
  },
): Json {
  const { echo } = frame;
  const body: Json = {
    id: frame.id,
    object: 'response',
    created_at: frame.createdAt,
    status: state.status,
    background: false,
    error: state.error === undefined ? null : { code: state.error.code, message: state.error.message },
    incomplete_details: state.incompleteReason ? { reason: state.incompleteReason } : null,
    instructions: echo.instructions,
    max_output_tokens: echo.maxOutputTokens,
    metadata: echo.metadata ?? {},
    model: frame.model,
    output: state.output,
    parallel_tool_calls: echo.parallelToolCalls,
    previous_response_id: null,
    prompt_cache_key: echo.promptCacheKey,
    reasoning: echo.reasoning ?? { effort: null, summary: null },
    safety_identifier: echo.safetyIdentifier,
    store: false,
    temperature: echo.temperature,
    text: echo.text,
    tool_choice: echo.toolChoice,
    tools: echo.tools,
    top_p: echo.topP,
    truncation: 'disabled',
    usage: null,
    user: echo.user,
  };
  if (state.status === 'completed' || state.status === 'incomplete') {
    body.completed_at = Math.floor(Date.now() / 1000);
  }
  if (state.completion !== undefined) {
    const { usage, meta } = usageOf(state.completion);
    body.usage = usage;
    body.meta = meta;
  }
  return body;
}

/** The items of a plain answer: the message (when the model wrote or refused), then its function calls. */
function outputOf(c: ChatCompletion, responseId: string, namespaced: ResponsesRequest['namespaced']): Json[] {
  const choice = c.choices[0];
  if (choice === undefined) return [];
  const status: ItemStatus = incompleteReasonOf(choice.finishReason) === null ? 'completed' : 'incomplete';
  const output: Json[] = [];
  const content: Json[] = [];
  if (choice.text !== null && choice.text !== '') content.push(outputTextPart(choice.text));
  if (choice.refusal !== undefined) content.push(refusalPart(choice.refusal));
  if (content.length > 0) output.push(messageItem(itemIdOf('msg', responseId, 0), content, status));
  for (const call of choice.toolCalls as ToolCall[]) {
    output.push(functionCallItem(itemIdOf('fc', responseId, output.length), call, namespaced, 'completed'));
  }
  return output;
}

/** The `response` body of a plain (not streamed) call. */
export function responseBody(
  c: ChatCompletion,
  frame: Omit<ResponseFrame, 'model'>,
  namespaced: ResponsesRequest['namespaced'],
): Json {
  const reason = incompleteReasonOf(c.choices[0]?.finishReason);
  return responseObject(
    { ...frame, model: c.model },
    {
      status: reason === null ? 'completed' : 'incomplete',
      output: outputOf(c, frame.id, namespaced),
      completion: c,
      incompleteReason: reason,
    },
  );
}
