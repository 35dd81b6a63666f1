import { GatewayError } from '../../errors.js';
import type { ChatRequest } from '../../gateway/types.js';
import type {
  ChatMessage,
  ContentPart,
  OpenAIOnlyFields,
  ReasoningEffort,
  ResponseFormat,
  SamplingParams,
  ToolCall,
  ToolChoice,
  ToolDefinition,
} from '../../providers/types.js';
import { parseDataUrl } from '../normalize-messages.js';
import { LIST_LIMITS, type RequestLimits } from '../schemas.js';

type Json = Record<string, unknown>;

/** A function offered inside a `namespace` tool, as the upstream sees it: `<namespace>__<name>`. */
export const NAMESPACE_SEPARATOR = '__';

/**
 * A Responses request read into the neutral `ChatRequest`, with what the door needs to shape its answer:
 * the request fields a Responses body echoes, the fields this door left out (`x-tollgate-dropped-params`,
 * beside what the upstream's adapter leaves out), and how to name a flattened namespace function again.
 */
export interface ResponsesRequest {
  chat: ChatRequest;
  /** Request fields (or tool types) left out here, as the Responses API names them. */
  dropped: string[];
  echo: ResponsesEcho;
  /** `<namespace>__<name>` → its namespace and name, for the function calls the model makes. */
  namespaced: Map<string, { namespace: string; name: string }>;
}

/** The request fields a `response` object repeats back. */
export interface ResponsesEcho {
  instructions: string | null;
  maxOutputTokens: number | null;
  metadata: Record<string, string> | null;
  parallelToolCalls: boolean;
  temperature: number | null;
  topP: number | null;
  toolChoice: unknown;
  tools: unknown[];
  reasoning: { effort: string | null; summary: string | null } | null;
  text: { format: Json };
  promptCacheKey: string | null;
  user: string | null;
  safetyIdentifier: string | null;
}

/** Hosted tools no upstream here can run; left out (and named) so a client's default set still works. */
const DROPPED_TOOLS = new Set(['web_search', 'web_search_preview', 'web_search_2025_08_26']);

/** Fields that need responses stored by the server, which Tollgate does not do. */
const STATEFUL_FIELDS = ['previous_response_id', 'conversation', 'prompt', 'background'] as const;

function invalid(param: string, message: string): GatewayError {
  return new GatewayError('invalid_request', message, { param });
}

function unsupported(param: string, message: string): GatewayError {
  return new GatewayError('unsupported_parameter', message, { param });
}

/** Set: present and not null (OpenAI clients send `null` for "not set"). */
function given<T>(value: T | null | undefined): value is T {
  return value !== undefined && value !== null;
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function str(value: unknown, param: string, options: { optional?: boolean } = {}): string | undefined {
  if (!given(value)) {
    if (options.optional) return undefined;
    throw invalid(param, `${param} is required.`);
  }
  if (typeof value !== 'string') throw invalid(param, `${param} must be a string.`);
  return value;
}

function num(value: unknown, param: string, min: number, max: number, integer = false): number | undefined {
  if (!given(value)) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value) || (integer && !Number.isInteger(value))) {
    throw invalid(param, `${param} must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}.`);
  }
  if (value < min || value > max) {
    throw invalid(param, `${param} must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}.`);
  }
  return value;
}

function bool(value: unknown, param: string): boolean | undefined {
  if (!given(value)) return undefined;
  if (typeof value !== 'boolean') throw invalid(param, `${param} must be true or false.`);
  return value;
}

function list(value: unknown, param: string, max: number): unknown[] {
  if (!Array.isArray(value)) throw invalid(param, `${param} must be an array.`);
  if (value.length > max) {
    throw invalid(param, `${param} has ${value.length} items; at most ${max} are accepted.`);
  }
  return value;
}

/** The text of content that may carry text parts only (instructions-like roles, tool outputs). */
function textOf(content: unknown, param: string, partTypes: readonly string[]): string {
  if (typeof content === 'string') return content;
  const parts = list(content, param, LIST_LIMITS.contentParts);
  const texts: string[] = [];
  for (const [j, part] of parts.entries()) {
    const at = `${param}[${j}]`;
    if (!isObject(part) || typeof part.type !== 'string') throw invalid(at, `${at} must be a content part.`);
    if (!partTypes.includes(part.type)) {
      throw invalid(
        `${at}.type`,
        `${at} is of type ${JSON.stringify(part.type)}; here only ${partTypes.join(' or ')} parts are taken.`,
      );
    }
    const text = part.type === 'refusal' ? part.refusal : part.text;
    texts.push(str(text, `${at}.${part.type === 'refusal' ? 'refusal' : 'text'}`) as string);
  }
  return texts.join('\n');
}

const IMAGE_DETAIL = new Set(['auto', 'low', 'high']);

/** A user message's content: text, images (`input_image`) and inline files (`input_file`). */
function userContent(content: unknown, param: string): string | ContentPart[] {
  if (typeof content === 'string') return content;
  const parts = list(content, param, LIST_LIMITS.contentParts);
  const out: ContentPart[] = [];
  let media = false;
  for (const [j, part] of parts.entries()) {
    const at = `${param}[${j}]`;
    if (!isObject(part)) throw invalid(at, `${at} must be a content part.`);
    switch (part.type) {
      case 'input_text':
        out.push({ type: 'text', text: str(part.text, `${at}.text`) as string });
        break;
      case 'input_image': {
        media = true;
        if (given(part.file_id)) {
          throw unsupported(
            `${at}.file_id`,
            `${at}.file_id: uploaded files are not available here; send image_url.`,
          );
        }
        const url = str(part.image_url, `${at}.image_url`) as string;
        const detail = given(part.detail) ? String(part.detail) : 'auto';
        if (!IMAGE_DETAIL.has(detail))
          throw invalid(`${at}.detail`, `${at}.detail must be auto, low or high.`);
        let image: Extract<ContentPart, { type: 'image' }>['image'];
        if (url.startsWith('data:')) {
          const parsed = parseDataUrl(url);
          if (!parsed)
            throw invalid(`${at}.image_url`, `${at}.image_url must be a base64 data: URL or an http(s) URL.`);
          image = { kind: 'data', ...parsed };
        } else if (/^https?:\/\/\S+$/i.test(url)) image = { kind: 'url', url };
        else
          throw invalid(`${at}.image_url`, `${at}.image_url must be a base64 data: URL or an http(s) URL.`);
        out.push({ type: 'image', image, detail: detail as 'auto' | 'low' | 'high' });
        break;
      }
      case 'input_file': {
        media = true;
        const data = str(part.file_data, `${at}.file_data`, { optional: true });
        const fileId = str(part.file_id, `${at}.file_id`, { optional: true });
        const parsed = data === undefined ? undefined : parseDataUrl(data);
        if (data !== undefined && parsed === undefined) {
          throw invalid(`${at}.file_data`, `${at}.file_data must be a base64 data: URL.`);
        }
        if (parsed === undefined && fileId === undefined) {
          throw invalid(at, `${at} needs file_data or file_id.`);
        }
        out.push({
          type: 'file',
          data: parsed?.data,
          mediaType: parsed?.mediaType,
          fileId,
          filename: str(part.filename, `${at}.filename`, { optional: true }),
        });
        break;
      }
      default:
        throw invalid(
          `${at}.type`,
          `${at} is of type ${JSON.stringify(part.type)}; a user message takes input_text, input_image and input_file parts.`,
        );
    }
  }
  if (!media) return out.map((p) => (p as { text: string }).text).join('\n');
  return out;
}

/** The text of a function's output: a string, or a list of `input_text` parts. */
function outputText(output: unknown, param: string): string {
  if (typeof output === 'string') return output;
  return textOf(output, param, ['input_text', 'output_text']);
}

/** `input`: a string (one user message) or a list of items, read into chat messages. */
function readInput(
  input: unknown,
  flatName: (name: string, namespace: unknown, param: string) => string,
  maxMessages: number,
): ChatMessage[] {
  if (typeof input === 'string') return [{ role: 'user', content: input }];
  if (!given(input)) throw invalid('input', 'input is required: a string or a list of input items.');
  const items = list(input, 'input', maxMessages);
  const messages: ChatMessage[] = [];
  /** The names of the function calls made so far, by `call_id`. */
  const calls = new Map<string, string>();
  for (const [i, item] of items.entries()) {
    const at = `input[${i}]`;
    if (!isObject(item)) throw invalid(at, `${at} must be an input item.`);
    const type = given(item.type) ? item.type : 'message';
    switch (type) {
      case 'message': {
        const role = item.role;
        if (role === 'user') messages.push({ role, content: userContent(item.content, `${at}.content`) });
        else if (role === 'system' || role === 'developer') {
          messages.push({ role, content: textOf(item.content, `${at}.content`, ['input_text']) });
        } else if (role === 'assistant') {
          const text = textOf(item.content, `${at}.content`, ['output_text', 'input_text', 'refusal']);
          messages.push({ role, content: text });
        } else {
          throw invalid(`${at}.role`, `${at}.role must be user, assistant, system or developer.`);
        }
        break;
      }
      case 'function_call': {
        const callId = str(item.call_id, `${at}.call_id`) as string;
        const name = flatName(str(item.name, `${at}.name`) as string, item.namespace, `${at}.namespace`);
        const call: ToolCall = {
          id: callId,
          name,
          arguments: str(item.arguments, `${at}.arguments`) as string,
        };
        calls.set(callId, name);
        // Calls in a row, and a call after the assistant's text, are one assistant turn.
        const last = messages[messages.length - 1];
        if (last?.role === 'assistant') last.toolCalls = [...(last.toolCalls ?? []), call];
        else messages.push({ role: 'assistant', content: null, toolCalls: [call] });
        break;
      }
      case 'function_call_output': {
        const callId = str(item.call_id, `${at}.call_id`) as string;
        const name = calls.get(callId);
        if (name === undefined) {
          throw invalid(
            `${at}.call_id`,
            `${at}.call_id ${JSON.stringify(callId.slice(0, 64))} answers no function_call before it in input (earlier responses are not stored here: send the call too).`,
          );
        }
        messages.push({
          role: 'tool',
          toolCallId: callId,
          name,
          content: outputText(item.output, `${at}.output`),
        });
        break;
      }
      // The model's reasoning of an earlier turn: its text is not sent back to any upstream here.
      case 'reasoning':
        break;
      case 'item_reference':
        throw unsupported(
          at,
          `${at}: item references need stored responses, which Tollgate does not keep; send the item itself.`,
        );
      default:
        throw unsupported(
          `${at}.type`,
          `${at} is of type ${JSON.stringify(type)}; Tollgate takes message, function_call, function_call_output and reasoning items.`,
        );
    }
  }
  if (messages.length === 0) throw invalid('input', 'input must hold at least one message.');
  return messages;
}

function functionTool(tool: Json, param: string, name: string): ToolDefinition {
  const out: ToolDefinition = { name };
  const description = str(tool.description, `${param}.description`, { optional: true });
  if (description !== undefined) out.description = description;
  if (given(tool.parameters)) {
    if (!isObject(tool.parameters))
      throw invalid(`${param}.parameters`, `${param}.parameters must be a JSON Schema object.`);
    out.parameters = tool.parameters;
  }
  const strict = bool(tool.strict, `${param}.strict`);
  if (strict !== undefined) out.strict = strict;
  return out;
}

const FUNCTION_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

function checkName(name: string, param: string): string {
  if (!FUNCTION_NAME.test(name)) {
    throw invalid(param, `${param} must be 1 to 64 letters, digits, underscores or dashes.`);
  }
  return name;
}

/** `tools`: functions, and the functions of `namespace` tools flattened; web search left out. */
function readTools(
  value: unknown,
  dropped: Set<string>,
  namespaced: ResponsesRequest['namespaced'],
): ToolDefinition[] {
  if (!given(value)) return [];
  const tools = list(value, 'tools', LIST_LIMITS.tools);
  const out: ToolDefinition[] = [];
  for (const [i, tool] of tools.entries()) {
    const at = `tools[${i}]`;
    if (!isObject(tool) || typeof tool.type !== 'string')
      throw invalid(at, `${at} must be a tool with a type.`);
    if (tool.type === 'function') {
      out.push(functionTool(tool, at, checkName(str(tool.name, `${at}.name`) as string, `${at}.name`)));
    } else if (tool.type === 'namespace') {
      const namespace = checkName(str(tool.name, `${at}.name`) as string, `${at}.name`);
      const inner = list(tool.tools, `${at}.tools`, LIST_LIMITS.tools);
      for (const [j, fn] of inner.entries()) {
        const fat = `${at}.tools[${j}]`;
        if (!isObject(fn) || fn.type !== 'function') {
          throw unsupported(`${fat}.type`, `${fat}: a namespace takes function tools only here.`);
        }
        const name = checkName(str(fn.name, `${fat}.name`) as string, `${fat}.name`);
        const flat = `${namespace}${NAMESPACE_SEPARATOR}${name}`;
        if (flat.length > 64)
          throw invalid(`${fat}.name`, `${fat}.name with its namespace must be at most 62 characters.`);
        namespaced.set(flat, { namespace, name });
        const definition = functionTool(fn, fat, flat);
        const nsDescription = typeof tool.description === 'string' ? tool.description : '';
        if (nsDescription !== '' && definition.description === undefined)
          definition.description = nsDescription;
        out.push(definition);
      }
    } else if (DROPPED_TOOLS.has(tool.type)) {
      dropped.add(tool.type);
    } else {
      throw unsupported(
        `${at}.type`,
        `${at} is a ${JSON.stringify(tool.type)} tool, which no upstream here can run; Tollgate takes function and namespace tools (web_search is left out).`,
      );
    }
  }
  const seen = new Set<string>();
  for (const tool of out) {
    if (seen.has(tool.name)) throw invalid('tools', `tools names the function "${tool.name}" twice.`);
    seen.add(tool.name);
  }
  return out;
}

function readToolChoice(
  value: unknown,
  tools: readonly ToolDefinition[],
  flatName: (n: string, ns: unknown, p: string) => string,
): ToolChoice | undefined {
  if (!given(value)) return undefined;
  let choice: ToolChoice;
  if (value === 'auto' || value === 'none' || value === 'required') choice = { type: value };
  else if (isObject(value) && value.type === 'function') {
    choice = {
      type: 'function',
      name: flatName(str(value.name, 'tool_choice.name') as string, value.namespace, 'tool_choice.namespace'),
    };
  } else {
    throw unsupported(
      'tool_choice',
      'tool_choice must be auto, none, required, or {"type": "function", "name": …}.',
    );
  }
  if (tools.length === 0) {
    if (choice.type === 'auto' || choice.type === 'none') return undefined;
    throw invalid('tool_choice', 'tool_choice is only allowed when tools are given.');
  }
  if (choice.type === 'function' && !tools.some((t) => t.name === (choice as { name: string }).name)) {
    throw invalid('tool_choice', `tool_choice names "${choice.name}", which is not among the tools.`);
  }
  return choice;
}

const EFFORTS = new Set(['none', 'minimal', 'low', 'medium', 'high', 'xhigh']);
const SUMMARIES = new Set(['auto', 'concise', 'detailed']);

function readReasoning(value: unknown): {
  effort: ReasoningEffort | undefined;
  echo: ResponsesEcho['reasoning'];
} {
  if (!given(value)) return { effort: undefined, echo: null };
  if (!isObject(value)) throw invalid('reasoning', 'reasoning must be an object.');
  let effort: ReasoningEffort | undefined;
  if (given(value.effort)) {
    if (typeof value.effort !== 'string' || !EFFORTS.has(value.effort)) {
      throw invalid(
        'reasoning.effort',
        'reasoning.effort must be one of none, minimal, low, medium, high, xhigh.',
      );
    }
    effort = value.effort as ReasoningEffort;
  }
  // `generate_summary` is the older name of `summary`.
  const summary = given(value.summary) ? value.summary : value.generate_summary;
  if (given(summary) && (typeof summary !== 'string' || !SUMMARIES.has(summary))) {
    throw invalid('reasoning.summary', 'reasoning.summary must be auto, concise or detailed.');
  }
  return { effort, echo: { effort: effort ?? null, summary: given(summary) ? (summary as string) : null } };
}

function readText(
  value: unknown,
  openai: OpenAIOnlyFields,
): { format: ResponseFormat | undefined; echo: Json } {
  if (!given(value)) return { format: undefined, echo: { type: 'text' } };
  if (!isObject(value)) throw invalid('text', 'text must be an object.');
  if (given(value.verbosity)) openai.verbosity = str(value.verbosity, 'text.verbosity') as string;
  const format = value.format;
  if (!given(format)) return { format: undefined, echo: { type: 'text' } };
  if (!isObject(format)) throw invalid('text.format', 'text.format must be an object.');
  switch (format.type) {
    case 'text':
      return { format: undefined, echo: { type: 'text' } };
    case 'json_object':
      return { format: { type: 'json_object' }, echo: { type: 'json_object' } };
    case 'json_schema': {
      const out: ResponseFormat = {
        type: 'json_schema',
        name: str(format.name, 'text.format.name') as string,
      };
      const description = str(format.description, 'text.format.description', { optional: true });
      if (description !== undefined) out.description = description;
      if (given(format.schema)) {
        if (!isObject(format.schema))
          throw invalid('text.format.schema', 'text.format.schema must be a JSON Schema object.');
        out.schema = format.schema;
      }
      const strict = bool(format.strict, 'text.format.strict');
      if (strict !== undefined) out.strict = strict;
      return { format: out, echo: format };
    }
    default:
      throw invalid('text.format.type', 'text.format.type must be text, json_object or json_schema.');
  }
}

/**
 * Reads a `POST /responses` body (docs/api.md, "Responses"): checks it field by field, each error naming
 * its field in `param`, and turns it into the `ChatRequest` every provider's adapter speaks. Unknown fields
 * are ignored, as on the chat door. Whatever needs responses stored by the server is refused (400), since
 * Tollgate keeps none.
 */
export function readResponsesRequest(body: unknown, limits: RequestLimits): ResponsesRequest {
  if (!isObject(body)) throw invalid('input', 'The body must be a JSON object with input.');
  for (const field of STATEFUL_FIELDS) {
    if (given(body[field]) && body[field] !== false) {
      throw unsupported(
        field,
        `${field} is not supported: Tollgate stores no responses. Send the whole conversation in input (with store: false).`,
      );
    }
  }
  if (body.store === true) {
    throw unsupported(
      'store',
      'store: true is not supported: Tollgate stores no responses. Set store to false or leave it out.',
    );
  }
  const dropped = new Set<string>();
  const namespaced: ResponsesRequest['namespaced'] = new Map();
  const tools = readTools(body.tools, dropped, namespaced);
  const flatName = (name: string, namespace: unknown, param: string): string => {
    if (!given(namespace)) return name;
    if (typeof namespace !== 'string') throw invalid(param, `${param} must be a string.`);
    return `${namespace}${NAMESPACE_SEPARATOR}${name}`;
  };
  const instructions = str(body.instructions, 'instructions', { optional: true });
  const messages = readInput(body.input, flatName, limits.maxMessages);
  if (instructions !== undefined && instructions !== '')
    messages.unshift({ role: 'system', content: instructions });

  const params: SamplingParams = {};
  const temperature = num(body.temperature, 'temperature', 0, 2);
  if (temperature !== undefined) params.temperature = temperature;
  const topP = num(body.top_p, 'top_p', 0, 1);
  if (topP !== undefined) params.top_p = topP;
  const user = str(body.user, 'user', { optional: true });
  if (user !== undefined) params.user = user;

  const openai: OpenAIOnlyFields = {};
  const promptCacheKey = str(body.prompt_cache_key, 'prompt_cache_key', { optional: true });
  if (promptCacheKey !== undefined) openai.prompt_cache_key = promptCacheKey;
  const safetyIdentifier = str(body.safety_identifier, 'safety_identifier', { optional: true });
  if (safetyIdentifier !== undefined) openai.safety_identifier = safetyIdentifier;
  if (given(body.service_tier)) openai.service_tier = str(body.service_tier, 'service_tier') as string;
  let metadata: Record<string, string> | null = null;
  if (given(body.metadata)) {
    if (!isObject(body.metadata) || Object.keys(body.metadata).length > LIST_LIMITS.metadata) {
      throw invalid(
        'metadata',
        `metadata must be an object of at most ${LIST_LIMITS.metadata} string values.`,
      );
    }
    metadata = body.metadata as Record<string, string>;
    openai.metadata = metadata;
  }
  const text = readText(body.text, openai);
  const reasoning = readReasoning(body.reasoning);
  const maxOutput = num(body.max_output_tokens, 'max_output_tokens', 1, limits.maxTokensCeiling, true);
  const parallel = bool(body.parallel_tool_calls, 'parallel_tool_calls');
  const toolChoice = readToolChoice(body.tool_choice, tools, flatName);

  // Settings with no counterpart on any upstream here that do not change what the answer says.
  if (given(body.include)) {
    const include = list(body.include, 'include', 16);
    if (include.length > 0) dropped.add('include');
  }
  if (body.truncation === 'auto') dropped.add('truncation');
  if (given(body.max_tool_calls)) dropped.add('max_tool_calls');
  if (given(body.top_logprobs)) dropped.add('top_logprobs');

  const stream = bool(body.stream, 'stream') === true;
  if (stream && limits.streaming !== true) {
    throw new GatewayError(
      'streaming_not_supported',
      'Streaming is not supported: responses are always complete JSON. Set "stream" to false or omit it.',
      { param: 'stream' },
    );
  }

  const chat: ChatRequest = {
    messages,
    model: str(body.model, 'model', { optional: true }),
    provider: str(body.provider, 'provider', { optional: true }),
    maxTokens: maxOutput,
    params,
    tools: tools.length > 0 ? tools : undefined,
    toolChoice,
    parallelToolCalls: parallel,
    responseFormat: text.format,
    n: 1,
    logprobs: undefined,
    reasoningEffort: reasoning.effort,
    openai,
    legacyFunctions: false,
    ...(stream ? { stream: { includeUsage: true } } : {}),
  };
  return {
    chat,
    dropped: [...dropped],
    namespaced,
    echo: {
      instructions: instructions ?? null,
      maxOutputTokens: maxOutput ?? null,
      metadata,
      parallelToolCalls: parallel ?? true,
      temperature: temperature ?? null,
      topP: topP ?? null,
      toolChoice: given(body.tool_choice) ? body.tool_choice : 'auto',
      tools: Array.isArray(body.tools)
        ? body.tools.filter((t) => !(isObject(t) && DROPPED_TOOLS.has(String(t.type))))
        : [],
      reasoning: reasoning.echo,
      text: { format: text.echo },
      promptCacheKey: promptCacheKey ?? null,
      user: user ?? null,
      safetyIdentifier: safetyIdentifier ?? null,
    },
  };
}
