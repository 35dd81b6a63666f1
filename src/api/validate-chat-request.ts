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
 * invalid_messages) → stream (400 streaming_not_supported) → the other fields (400 invalid_request), each
 * naming the field in `param` and saying what is wrong with it. Unknown fields are ignored, as OpenAI
 * clients send more than Tollgate uses.
 *
 * The schema is checked up to its first failing keyword, not to the end (`allErrors` off), and a list's
 * length before its items, so a refused body costs no more than the part of it read up to the problem.
 */
export function createChatRequestValidator(limits: ValidationLimits): (body: unknown) => ChatRequest {
  // verbose: each error carries its value and the schema it failed, which the message is written from.
  const ajv = new Ajv2020({ allErrors: false, verbose: true, strict: true, discriminator: true });
  const check = ajv.compile(chatRequestSchema(limits));
  return (body) => {
    if (!check(body)) throw toError(check.errors ?? [], body);
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

/** A list too long or empty: said as such rather than as the alternatives the value failed. */
function isCountError(e: ErrorObject): boolean {
  return e.keyword === 'maxItems' || e.keyword === 'minItems' || e.keyword === 'maxProperties';
}

/**
 * The error that says most precisely what is wrong. The deepest (`messages[2].content[0].text` rather than
 * `messages[2].content`); at the same place, a count error; else the last one, which for a value that
 * matched none of a field's forms (`anyOf`) is the one that lists them all.
 */
function culpritOf(errors: readonly ErrorObject[]): ErrorObject {
  let culprit = errors[0] as ErrorObject;
  let depth = -1;
  for (const e of errors) {
    const d = pointerOf(e).split('/').length;
    if (d > depth || (d === depth && !isCountError(culprit))) {
      culprit = e;
      depth = d;
    }
  }
  return culprit;
}

function toError(errors: readonly ErrorObject[], body: unknown): GatewayError {
  const culprit = culpritOf(errors);
  const pointer = pointerOf(culprit);
  const isObject = typeof body === 'object' && body !== null && !Array.isArray(body);
  // No object, or `messages` absent, not an array, or empty: the message the API has always given.
  if (!isObject || pointer === '' || (pointer === '/messages' && culprit.keyword !== 'maxItems')) {
    return new GatewayError('invalid_messages', MESSAGES_REQUIRED, { param: 'messages' });
  }
  const param = toParam(pointer);
  if (pointer.startsWith('/messages/') || pointer === '/messages') {
    return new GatewayError('invalid_messages', whatIsWrong(culprit, param), { param });
  }
  // The schema looks at `messages` first, so they passed it: what only code can check about them still
  // comes before the other fields.
  normalizeMessages((body as Body).messages as Body[]);
  if ((body as Body).stream === true) {
    return new GatewayError(
      'streaming_not_supported',
      'Streaming is not supported: responses are always complete JSON. Set "stream" to false or omit it.',
      { param: 'stream' },
    );
  }
  return invalidRequest(param, whatIsWrong(culprit, param));
}

/** One sentence naming the field, what it must be, and what it was. */
function whatIsWrong(e: ErrorObject, param: string): string {
  const schema = e.parentSchema as Schema;
  switch (e.keyword) {
    case 'required':
      return `${param} is required.`;
    case 'maxItems':
      return `${param} has ${(e.data as unknown[]).length} ${pluralOf(schema.items as Schema)}; at most ${schema.maxItems} are accepted.`;
    case 'maxProperties':
      return `${param} has ${Object.keys(e.data as object).length} keys; at most ${schema.maxProperties} are accepted.`;
    case 'minItems':
      return `${param} must not be empty.`;
    default:
      return `${param} must be ${describe(schema)}; got ${describeValue(e.data)}.`;
  }
}

/** The value a caller sent, briefly: a string quoted (its start only), a number as it is, else its kind. */
function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return value.length === 0 ? 'an empty array' : 'an array';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'string') {
    return value.length > 40 ? `${JSON.stringify(value.slice(0, 40))}…` : JSON.stringify(value);
  }
  return String(value);
}

/** What the items of a list are called: the title of their schema, what they must be, or "items". */
function pluralOf(items: Schema): string {
  if (typeof items.title === 'string') return `${items.title}s`;
  if (items.type === 'string' || items.type === 'number' || items.type === 'integer') {
    return `${describe(items).replace(/^an? /, '')}s`;
  }
  return 'items';
}

/** A short English description of what a schema accepts, read off the schema itself. */
function describe(schema: Schema): string {
  const variants = ((schema.anyOf ?? schema.oneOf) as Schema[] | undefined)?.filter((s) => s.type !== 'null');
  if (variants && schema.type === undefined) return variants.map(describe).join(' or ');
  if ('const' in schema) return JSON.stringify(schema.const);
  if (Array.isArray(schema.enum)) return `one of ${schema.enum.map((v) => JSON.stringify(v)).join(', ')}`;
  switch (schema.type) {
    case 'string': {
      const kind =
        typeof schema.minLength === 'number' && schema.minLength > 0 ? 'a non-empty string' : 'a string';
      const max = schema.maxLength === undefined ? '' : ` of at most ${schema.maxLength} characters`;
      const pattern = schema.pattern === undefined ? '' : ` matching ${schema.pattern}`;
      return `${kind}${max}${pattern}`;
    }
    case 'integer':
    case 'number': {
      const noun = schema.type === 'integer' ? 'an integer' : 'a number';
      if (schema.minimum !== undefined && schema.maximum !== undefined) {
        return `${noun} from ${schema.minimum} to ${schema.maximum}`;
      }
      return noun;
    }
    case 'boolean':
      return 'true or false';
    case 'array': {
      const noun = pluralOf(schema.items as Schema);
      return schema.maxItems === undefined
        ? `an array of ${noun}`
        : `an array of at most ${schema.maxItems} ${noun}`;
    }
    case 'object': {
      const required = (schema.required as string[] | undefined) ?? [];
      return required.length === 0
        ? 'an object'
        : `an object with ${required.map((k) => `"${k}"`).join(', ')}`;
    }
    default:
      return 'a valid value';
  }
}
