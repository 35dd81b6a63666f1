import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';
import { GatewayError } from '../errors.js';
import type { ChatRequest } from '../gateway/types.js';
import type {
  OpenAIOnlyFields,
  ReasoningEffort,
  ResponseFormat,
  SamplingParams,
  ToolChoice,
  ToolDefinition,
} from '../providers/types.js';
import { MESSAGES_REQUIRED, normalizeMessages } from './normalize-messages.js';
import { chatRequestSchema, type RequestLimits } from './schemas.js';

export type ValidationLimits = RequestLimits;

type Schema = Record<string, unknown>;
type Body = Record<string, unknown>;

/**
 * Validates chat-completion bodies with the JSON Schema that `/api/v1/openapi.json` publishes
 * (`chatRequestSchema`), so the document and the server cannot disagree, then checks what a schema cannot
 * say (each role's shape, tool results paired with their calls, a tool choice naming an offered tool). A
 * failing body becomes one error, in the documented precedence (docs/api.md): messages (400
 * invalid_messages, "Messages array is required") → stream (400 streaming_not_supported) → the other
 * fields (400 invalid_request naming the field). Unknown fields are ignored, as OpenAI clients send more
 * than Tollgate uses.
 */
export function createChatRequestValidator(limits: ValidationLimits): (body: unknown) => ChatRequest {
  const schema = chatRequestSchema(limits);
  const ajv = new Ajv2020({ allErrors: true, strict: true, discriminator: true });
  const check = ajv.compile(schema);
  const expectations = describeFields(schema);
  return (body) => {
    if (!check(body)) throw toError(check.errors ?? [], body, limits, expectations);
    return toChatRequest(body as Body);
  };
}

function invalidRequest(param: string, message: string): GatewayError {
  return new GatewayError('invalid_request', message, { param });
}

/** Set: present and not null (OpenAI clients send `null` for "not set"). */
function given<T>(value: T | null | undefined): value is T {
  return value !== undefined && value !== null;
}

type WireFunction = {
  name: string;
  description?: string;
  parameters?: Record<string, unknown>;
  strict?: boolean | null;
};

function toolDefinition(fn: WireFunction): ToolDefinition {
  const tool: ToolDefinition = { name: fn.name };
  if (fn.description !== undefined) tool.description = fn.description;
  if (fn.parameters !== undefined) tool.parameters = fn.parameters;
  if (given(fn.strict)) tool.strict = fn.strict;
  return tool;
}

/** `tools` or the legacy `functions`, and `tool_choice` or the legacy `function_call`. */
function readTools(body: Body): { tools?: ToolDefinition[]; toolChoice?: ToolChoice; legacy: boolean } {
  const legacy = given(body.functions) || given(body.function_call);
  if (legacy && (given(body.tools) || given(body.tool_choice))) {
    throw invalidRequest(
      given(body.functions) ? 'functions' : 'function_call',
      'Use tools and tool_choice, or the legacy functions and function_call, not both.',
    );
  }
  const wireTools = legacy
    ? (body.functions as WireFunction[] | undefined)
    : (body.tools as Array<{ function: WireFunction }> | null | undefined)?.map((t) => t.function);
  const tools = wireTools?.map(toolDefinition);
  const choiceParam = legacy ? 'function_call' : 'tool_choice';
  const wireChoice = body[choiceParam] as
    | string
    | { name?: string; function?: { name: string } }
    | null
    | undefined;
  let toolChoice: ToolChoice | undefined;
  if (typeof wireChoice === 'string') toolChoice = { type: wireChoice as 'none' | 'auto' | 'required' };
  else if (given(wireChoice)) {
    toolChoice = { type: 'function', name: (wireChoice.function?.name ?? wireChoice.name) as string };
  }
  if (toolChoice && (tools === undefined || tools.length === 0)) {
    throw invalidRequest(
      choiceParam,
      `${choiceParam} is only allowed when ${legacy ? 'functions' : 'tools'} are given.`,
    );
  }
  if (toolChoice?.type === 'function') {
    const wanted = toolChoice.name;
    if (!tools?.some((t) => t.name === wanted)) {
      throw invalidRequest(
        choiceParam,
        `${choiceParam} names "${wanted}", which is not among the ${legacy ? 'functions' : 'tools'}.`,
      );
    }
  }
  const out: { tools?: ToolDefinition[]; toolChoice?: ToolChoice; legacy: boolean } = { legacy };
  if (tools !== undefined && tools.length > 0) out.tools = tools;
  if (toolChoice) out.toolChoice = toolChoice;
  return out;
}

function readResponseFormat(value: unknown): ResponseFormat | undefined {
  if (!given(value)) return undefined;
  const format = value as { type: string; json_schema?: WireFunction & { schema?: Record<string, unknown> } };
  if (format.type === 'text') return undefined;
  if (format.type === 'json_object') return { type: 'json_object' };
  const js = format.json_schema as NonNullable<typeof format.json_schema>;
  const out: ResponseFormat = { type: 'json_schema', name: js.name };
  if (js.description !== undefined) out.description = js.description;
  if (js.schema !== undefined) out.schema = js.schema;
  if (given(js.strict)) out.strict = js.strict;
  return out;
}

const OPENAI_ONLY = new Set<string>([
  'metadata',
  'prediction',
  'service_tier',
  'store',
  'prompt_cache_key',
  'safety_identifier',
  'verbosity',
  'web_search_options',
] satisfies (keyof OpenAIOnlyFields)[]);

/** The sampling knobs the caller set. Each is read by name: most requests set none of them. */
function readParams(body: Body): SamplingParams {
  const params: SamplingParams = {};
  if (typeof body.temperature === 'number') params.temperature = body.temperature;
  if (typeof body.top_p === 'number') params.top_p = body.top_p;
  if (typeof body.presence_penalty === 'number') params.presence_penalty = body.presence_penalty;
  if (typeof body.frequency_penalty === 'number') params.frequency_penalty = body.frequency_penalty;
  if (typeof body.seed === 'number') params.seed = body.seed;
  if (typeof body.stop === 'string') params.stop = [body.stop];
  else if (Array.isArray(body.stop)) params.stop = body.stop as string[];
  if (typeof body.user === 'string') params.user = body.user;
  if (given(body.logit_bias)) params.logit_bias = body.logit_bias as Record<string, number>;
  return params;
}

/** The OpenAI-only fields the caller set, found among the body's own keys (usually a handful). */
function readOpenAIOnly(body: Body): OpenAIOnlyFields {
  const openai: Record<string, unknown> = {};
  for (const key in body) {
    if (OPENAI_ONLY.has(key) && given(body[key])) openai[key] = body[key];
  }
  return openai as OpenAIOnlyFields;
}

/** The request once the schema has accepted it. */
function toChatRequest(body: Body): ChatRequest {
  const messages = normalizeMessages(body.messages as Body[]);
  const params = readParams(body);

  // Output Tollgate cannot return at all, on any provider: refused before anything else happens.
  const modalities = body.modalities as string[] | null | undefined;
  if (given(body.audio) || modalities?.includes('audio')) {
    throw new GatewayError(
      'unsupported_parameter',
      'Audio output is not supported: Tollgate answers with text only. Leave out "audio" and ask for modalities ["text"].',
      { param: given(body.audio) ? 'audio' : 'modalities' },
    );
  }
  const { tools, toolChoice, legacy } = readTools(body);
  if (given(body.top_logprobs) && body.logprobs !== true) {
    throw invalidRequest('top_logprobs', 'top_logprobs needs logprobs set to true.');
  }
  const openai = readOpenAIOnly(body);
  const stream = readStream(body);
  const maxCompletion = body.max_completion_tokens;
  const maxTokens = body.max_tokens;
  return {
    messages,
    model: typeof body.model === 'string' ? body.model : undefined,
    provider: typeof body.provider === 'string' ? body.provider : undefined,
    maxTokens:
      typeof maxCompletion === 'number'
        ? maxCompletion
        : typeof maxTokens === 'number'
          ? maxTokens
          : undefined,
    params,
    tools,
    toolChoice,
    parallelToolCalls: typeof body.parallel_tool_calls === 'boolean' ? body.parallel_tool_calls : undefined,
    responseFormat: readResponseFormat(body.response_format),
    n: typeof body.n === 'number' ? body.n : 1,
    logprobs:
      body.logprobs === true
        ? { top: typeof body.top_logprobs === 'number' ? body.top_logprobs : undefined }
        : undefined,
    reasoningEffort: given(body.reasoning_effort) ? (body.reasoning_effort as ReasoningEffort) : undefined,
    openai,
    legacyFunctions: legacy,
    ...(stream === undefined ? {} : { stream }),
  };
}

/** `stream: true` (the schema admits it only with STREAMING=on) and its `stream_options`. */
function readStream(body: Body): ChatRequest['stream'] {
  const options = body.stream_options as { include_usage?: boolean | null } | null | undefined;
  if (body.stream !== true) {
    if (given(options))
      throw invalidRequest('stream_options', 'stream_options is only allowed when stream is true.');
    return undefined;
  }
  return { includeUsage: options?.include_usage === true };
}

/** `/messages/0/content/1/text` → `messages[0].content[1].text`. */
function toParam(pointer: string): string {
  let out = '';
  for (const segment of pointer.split('/').slice(1)) {
    const key = segment.replace(/~1/g, '/').replace(/~0/g, '~');
    out += /^\d+$/.test(key) ? `[${key}]` : out === '' ? key : `.${key}`;
  }
  return out;
}

/** Where an error points: its instance path, plus the missing property for `required`. */
function pointerOf(e: ErrorObject): string {
  if (e.keyword === 'required')
    return `${e.instancePath}/${(e.params as { missingProperty: string }).missingProperty}`;
  return e.instancePath;
}

function toError(
  errors: ErrorObject[],
  body: unknown,
  limits: ValidationLimits,
  expectations: Map<string, string>,
): GatewayError {
  const isObject = typeof body === 'object' && body !== null && !Array.isArray(body);
  const messageErrors = errors.filter((e) => pointerOf(e).startsWith('/messages') || e.instancePath === '');
  if (!isObject || messageErrors.length > 0) {
    const tooMany = messageErrors.find((e) => e.instancePath === '/messages' && e.keyword === 'maxItems');
    if (tooMany) {
      const got = Array.isArray((body as Body).messages) ? ((body as Body).messages as unknown[]).length : 0;
      return new GatewayError(
        'invalid_messages',
        `${MESSAGES_REQUIRED}: at most ${limits.maxMessages} messages are accepted per request (got ${got}).`,
        { param: 'messages' },
      );
    }
    // The deepest error says most precisely what is wrong (e.g. messages[2].content[0].text).
    let deepest = 'messages';
    for (const e of messageErrors) {
      const param = toParam(pointerOf(e));
      if (param.length > deepest.length) deepest = param;
    }
    return new GatewayError('invalid_messages', MESSAGES_REQUIRED, { param: deepest });
  }
  // The messages passed the schema: what only code can check about them still comes first.
  normalizeMessages((body as Body).messages as Body[]);
  if ((body as Body).stream === true) {
    return new GatewayError(
      'streaming_not_supported',
      'Streaming is not supported: responses are always complete JSON. Set "stream" to false or omit it.',
      { param: 'stream' },
    );
  }
  const first = errors[0] as ErrorObject;
  const path = toParam(pointerOf(first));
  const field = path.split(/[.[]/)[0] ?? '';
  // A top-level field is described from the schema; a nested one (tools[0].function.name) by what failed.
  const expected =
    path === field
      ? `expected ${expectations.get(field) ?? 'a valid value'}`
      : (first.message ?? 'not a valid value');
  return new GatewayError('invalid_request', `Invalid value for '${path}': ${expected}.`, { param: path });
}

/** A short English description of what each top-level field accepts, read off the schema itself. */
function describeFields(schema: Schema): Map<string, string> {
  const out = new Map<string, string>();
  for (const [name, property] of Object.entries(schema.properties as Record<string, Schema>)) {
    out.set(name, describe(property));
  }
  return out;
}

function describe(schema: Schema): string {
  const variants = (schema.anyOf as Schema[] | undefined)?.filter((s) => s.type !== 'null');
  if (variants) return variants.map(describe).join(' or ');
  if ('const' in schema) return JSON.stringify(schema.const);
  if (Array.isArray(schema.enum)) return `one of ${schema.enum.map((v) => JSON.stringify(v)).join(', ')}`;
  switch (schema.type) {
    case 'string': {
      const max = schema.maxLength === undefined ? '' : ` of at most ${schema.maxLength} characters`;
      return `a non-empty string${max}`;
    }
    case 'integer':
    case 'number': {
      const noun = schema.type === 'integer' ? 'an integer' : 'a number';
      if (schema.minimum !== undefined && schema.maximum !== undefined) {
        return `${noun} from ${schema.minimum} to ${schema.maximum}`;
      }
      return noun;
    }
    case 'array': {
      const noun = `${describe(schema.items as Schema).replace(/^an? /, '')}s`;
      return schema.maxItems === undefined
        ? `an array of ${noun}`
        : `an array of at most ${schema.maxItems} ${noun}`;
    }
    default:
      return String(schema.type ?? 'a valid value');
  }
}
