/**
 * JSON Schemas (2020-12, as OpenAPI 3.1 uses) of the public API. The server validates chat requests with
 * `chatRequestSchema` (see validate-chat-request.ts) and `/api/v1/openapi.json` is built from these same
 * objects, so the document cannot drift from what the server accepts and returns.
 */

export interface RequestLimits {
  maxMessages: number;
  maxTokensCeiling: number;
}

type Schema = Record<string, unknown>;

const nullable = (schema: Schema): Schema => ({ anyOf: [schema, { type: 'null' }] });

export const textPartSchema: Schema = {
  type: 'object',
  required: ['type', 'text'],
  properties: { type: { const: 'text' }, text: { type: 'string' } },
};

export const messageSchema: Schema = {
  type: 'object',
  required: ['role', 'content'],
  properties: {
    role: { enum: ['system', 'user', 'assistant'] },
    content: {
      description: 'The message text, or an array of text parts (joined with newlines).',
      anyOf: [{ type: 'string' }, { type: 'array', minItems: 1, items: textPartSchema }],
    },
  },
};

const shortString: Schema = { type: 'string', minLength: 1, maxLength: 256 };

export function chatRequestSchema(limits: RequestLimits): Schema {
  const cap: Schema = { type: 'integer', minimum: 1, maximum: limits.maxTokensCeiling };
  return {
    type: 'object',
    required: ['messages'],
    properties: {
      messages: { type: 'array', minItems: 1, maxItems: limits.maxMessages, items: messageSchema },
      model: {
        ...nullable(shortString),
        description: '"auto" (default), a provider name, or a provider\'s model name.',
      },
      provider: { ...nullable(shortString), description: 'One of the provider names (prov-…).' },
      stream: { description: 'Only false is supported.', anyOf: [{ const: false }, { type: 'null' }] },
      max_tokens: nullable(cap),
      max_completion_tokens: { ...nullable(cap), description: 'Wins over max_tokens when both are given.' },
      temperature: nullable({ type: 'number', minimum: 0, maximum: 2 }),
      top_p: nullable({ type: 'number', minimum: 0, maximum: 1 }),
      presence_penalty: nullable({ type: 'number', minimum: -2, maximum: 2 }),
      frequency_penalty: nullable({ type: 'number', minimum: -2, maximum: 2 }),
      seed: nullable({ type: 'integer', minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER }),
      stop: nullable({
        anyOf: [
          { type: 'string', minLength: 1 },
          { type: 'array', maxItems: 4, items: { type: 'string', minLength: 1 } },
        ],
      }),
      user: nullable(shortString),
    },
  };
}

const money: Schema = { type: 'number', description: 'US dollars.' };

export const chatCompletionSchema: Schema = {
  type: 'object',
  required: ['id', 'object', 'created', 'model', 'choices', 'usage'],
  properties: {
    id: { type: 'string', pattern: '^chatcmpl-' },
    object: { const: 'chat.completion' },
    created: { type: 'integer' },
    model: { type: 'string' },
    choices: {
      type: 'array',
      minItems: 1,
      maxItems: 1,
      items: {
        type: 'object',
        required: ['index', 'message', 'finish_reason'],
        properties: {
          index: { type: 'integer', minimum: 0 },
          message: {
            type: 'object',
            required: ['role', 'content'],
            properties: { role: { const: 'assistant' }, content: { type: 'string' } },
          },
          finish_reason: { enum: ['stop', 'length', 'content_filter', 'tool_calls'] },
        },
      },
    },
    usage: {
      type: 'object',
      required: ['prompt_tokens', 'completion_tokens', 'total_tokens'],
      properties: {
        prompt_tokens: { type: 'integer', minimum: 0 },
        completion_tokens: { type: 'integer', minimum: 0 },
        total_tokens: { type: 'integer', minimum: 0 },
        cost: { ...money, description: 'Cost of the call in US dollars (= meta.cost.total).' },
      },
    },
    meta: {
      type: 'object',
      required: ['provider', 'cost', 'balance', 'duration_ms'],
      properties: {
        provider: { type: 'string' },
        cost: {
          type: 'object',
          required: ['input', 'output', 'total'],
          properties: { input: money, output: money, total: money },
        },
        balance: { ...money, description: 'Available balance after the charge.' },
        duration_ms: { type: 'integer', minimum: 0 },
      },
    },
  },
};

export const errorSchema: Schema = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['message', 'type', 'code'],
      properties: {
        message: { type: 'string' },
        type: { type: 'string' },
        code: { type: 'string' },
        param: { type: 'string' },
      },
    },
  },
};

export const modelSchema: Schema = {
  type: 'object',
  required: ['id', 'object', 'created', 'owned_by'],
  properties: {
    id: { type: 'string' },
    object: { const: 'model' },
    created: { type: 'integer' },
    owned_by: { type: 'string' },
    tollgate: {
      type: 'object',
      required: ['provider', 'pricing', 'auto', 'active'],
      properties: {
        provider: { type: 'string' },
        pricing: {
          type: 'object',
          description: 'US dollars per 1M tokens.',
          required: ['input', 'output'],
          properties: { input: money, output: money },
        },
        auto: { type: 'boolean' },
        active: { type: 'boolean' },
      },
    },
  },
};

export const modelListSchema: Schema = {
  type: 'object',
  required: ['object', 'data'],
  properties: { object: { const: 'list' }, data: { type: 'array', items: modelSchema } },
};

const nullableLimit: Schema = { anyOf: [{ type: 'integer', minimum: 1 }, { type: 'null' }] };

export const keyInfoSchema: Schema = {
  type: 'object',
  required: [
    'object',
    'id',
    'name',
    'hint',
    'created_at',
    'last_used_at',
    'balance',
    'held',
    'spend',
    'limits',
  ],
  properties: {
    object: { const: 'api_key' },
    id: { type: 'string' },
    name: { type: 'string' },
    hint: { type: 'string' },
    created_at: { type: 'integer' },
    last_used_at: { anyOf: [{ type: 'integer' }, { type: 'null' }] },
    balance: money,
    held: money,
    spend: {
      type: 'object',
      required: ['today', 'month'],
      properties: { today: money, month: money },
    },
    limits: {
      type: 'object',
      required: ['requests_per_minute', 'concurrent_requests'],
      properties: { requests_per_minute: nullableLimit, concurrent_requests: nullableLimit },
    },
  },
};
