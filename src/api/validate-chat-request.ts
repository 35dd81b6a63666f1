import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';
import { GatewayError } from '../errors.js';
import type { ChatRequest } from '../gateway/types.js';
import type { ChatMessage, Role, SamplingParams } from '../providers/types.js';
import { chatRequestSchema, type RequestLimits } from './schemas.js';

export type ValidationLimits = RequestLimits;

const MESSAGES_REQUIRED = 'Messages array is required';

type Schema = Record<string, unknown>;
type Body = Record<string, unknown>;
type WireMessage = { role: Role; content: string | Array<{ text: string }> };

/**
 * Validates chat-completion bodies with the JSON Schema that `/api/v1/openapi.json` publishes
 * (`chatRequestSchema`), so the document and the server cannot disagree. A failing body becomes one
 * error, in DESIGN.md's precedence: messages (400 invalid_messages, the spec's message) → stream (400
 * streaming_not_supported) → the other fields (400 invalid_request naming the field). Unknown fields are
 * ignored, as OpenAI clients send more than Tollgate uses.
 */
export function createChatRequestValidator(limits: ValidationLimits): (body: unknown) => ChatRequest {
  const schema = chatRequestSchema(limits);
  const ajv = new Ajv2020({ allErrors: true, strict: true });
  const check = ajv.compile(schema);
  const expectations = describeFields(schema);
  return (body) => {
    if (!check(body)) throw toError(check.errors ?? [], body, limits, expectations);
    return toChatRequest(body as Body);
  };
}

/** The request once the schema has accepted it: `content` parts joined with newlines, nulls dropped. */
function toChatRequest(body: Body): ChatRequest {
  const messages: ChatMessage[] = (body.messages as WireMessage[]).map((m) => ({
    role: m.role,
    content: typeof m.content === 'string' ? m.content : m.content.map((part) => part.text).join('\n'),
  }));
  const params: SamplingParams = {};
  for (const key of ['temperature', 'top_p', 'presence_penalty', 'frequency_penalty', 'seed'] as const) {
    const v = body[key];
    if (typeof v === 'number') params[key] = v;
  }
  if (typeof body.stop === 'string') params.stop = [body.stop];
  else if (Array.isArray(body.stop)) params.stop = body.stop as string[];
  if (typeof body.user === 'string') params.user = body.user;
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
  };
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
  if ((body as Body).stream === true) {
    return new GatewayError(
      'streaming_not_supported',
      'Streaming is not supported: responses are always complete JSON. Set "stream" to false or omit it.',
      { param: 'stream' },
    );
  }
  const field = toParam(pointerOf(errors[0] as ErrorObject)).split(/[.[]/)[0] ?? '';
  return new GatewayError(
    'invalid_request',
    `Invalid value for '${field}': expected ${expectations.get(field) ?? 'a valid value'}.`,
    { param: field },
  );
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
