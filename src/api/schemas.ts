/**
 * JSON Schemas (2020-12, as OpenAPI 3.1 uses) of the public API. The server validates chat requests with
 * `chatRequestSchema` (see validate-chat-request.ts) and `/api/v1/openapi.json` is built from these same
 * objects, so the document cannot drift from what the server accepts and returns.
 */

export interface RequestLimits {
  maxMessages: number;
  maxTokensCeiling: number;
  /** STREAMING=on: `stream: true` is accepted (off, or absent: refused). */
  streaming?: boolean;
}

type Schema = Record<string, unknown>;

/**
 * How many items each list of a chat request may hold (the messages: `RequestLimits.maxMessages`). The
 * validator checks a list's length before it looks at any of its items (docs/api.md, "Limits").
 */
export const LIST_LIMITS = {
  /** Parts of one message's `content`: room for OpenAI's 500 images of a request, with text between them. */
  contentParts: 1000,
  /** `tools`, `functions`, and one assistant message's `tool_calls`: OpenAI's own limit. */
  tools: 128,
  toolCalls: 128,
  stop: 4,
  logitBias: 300,
  metadata: 16,
  modalities: 2,
} as const;

const nullable = (schema: Schema): Schema => ({ anyOf: [schema, { type: 'null' }] });

export const textPartSchema: Schema = {
  title: 'text part',
  type: 'object',
  required: ['type', 'text'],
  properties: { type: { const: 'text' }, text: { type: 'string' } },
};

/** `{type, <type>: {...}}` parts: the `type` names the one property that must be there. */
function part(type: string, body: Schema): Schema {
  return { type: 'object', required: ['type', type], properties: { type: { const: type }, [type]: body } };
}

/**
 * A content part of any role; which parts a role may carry is checked after the schema (a system
 * message takes text only, a user message text, images, audio and files, an assistant message text and
 * refusals).
 */
export const contentPartSchema: Schema = {
  title: 'content part',
  type: 'object',
  required: ['type'],
  properties: { type: { enum: ['text', 'image_url', 'input_audio', 'file', 'refusal'] } },
  // The part's `type` picks the one branch it is checked against (and the one an error is about).
  discriminator: { propertyName: 'type' },
  oneOf: [
    textPartSchema,
    part('image_url', {
      type: 'object',
      required: ['url'],
      properties: {
        url: { type: 'string', minLength: 1, description: 'A data: URL (base64) or an http(s) URL.' },
        detail: { enum: ['auto', 'low', 'high'] },
      },
    }),
    part('input_audio', {
      type: 'object',
      required: ['data', 'format'],
      properties: { data: { type: 'string', minLength: 1 }, format: { enum: ['wav', 'mp3'] } },
    }),
    part('file', {
      type: 'object',
      properties: {
        file_data: { type: 'string', minLength: 1, description: 'A data: URL (base64).' },
        file_id: { type: 'string', minLength: 1 },
        filename: { type: 'string' },
      },
    }),
    part('refusal', { type: 'string' }),
  ],
};

const shortString: Schema = { type: 'string', minLength: 1, maxLength: 256 };
const functionName: Schema = { type: 'string', pattern: '^[a-zA-Z0-9_-]{1,64}$' };

export const toolCallSchema: Schema = {
  title: 'tool call',
  type: 'object',
  required: ['id', 'type', 'function'],
  properties: {
    id: shortString,
    type: { const: 'function' },
    function: {
      type: 'object',
      required: ['name', 'arguments'],
      properties: { name: functionName, arguments: { type: 'string' } },
    },
  },
};

export const messageSchema: Schema = {
  title: 'message',
  type: 'object',
  required: ['role'],
  properties: {
    role: { enum: ['system', 'developer', 'user', 'assistant', 'tool', 'function'] },
    content: {
      description:
        'The message text, or an array of parts (text parts are joined with newlines). null only on an ' +
        'assistant message with tool_calls.',
      anyOf: [
        { type: 'string' },
        { type: 'array', minItems: 1, maxItems: LIST_LIMITS.contentParts, items: contentPartSchema },
        { type: 'null' },
      ],
    },
    name: shortString,
    tool_calls: { type: 'array', maxItems: LIST_LIMITS.toolCalls, items: toolCallSchema },
    tool_call_id: { ...shortString, description: 'On a tool message: the id of the call it answers.' },
    function_call: {
      description: 'Legacy form of one tool call.',
      anyOf: [
        {
          type: 'object',
          required: ['name', 'arguments'],
          properties: { name: functionName, arguments: { type: 'string' } },
        },
        { type: 'null' },
      ],
    },
    refusal: { anyOf: [{ type: 'string' }, { type: 'null' }] },
  },
};

const functionSchema: Schema = {
  title: 'function',
  type: 'object',
  required: ['name'],
  properties: {
    name: functionName,
    description: { type: 'string' },
    parameters: { type: 'object', description: 'A JSON Schema of the arguments.' },
    strict: nullable({ type: 'boolean' }),
  },
};

export const toolSchema: Schema = {
  title: 'tool',
  type: 'object',
  required: ['type', 'function'],
  properties: { type: { const: 'function' }, function: functionSchema },
};

/** The `type` picks the one branch a response format is checked against (and the one an error is about). */
export const responseFormatSchema: Schema = {
  type: 'object',
  required: ['type'],
  properties: { type: { enum: ['text', 'json_object', 'json_schema'] } },
  discriminator: { propertyName: 'type' },
  oneOf: [
    { type: 'object', required: ['type'], properties: { type: { const: 'text' } } },
    { type: 'object', required: ['type'], properties: { type: { const: 'json_object' } } },
    {
      type: 'object',
      required: ['type', 'json_schema'],
      properties: {
        type: { const: 'json_schema' },
        json_schema: {
          type: 'object',
          required: ['name'],
          properties: {
            name: functionName,
            description: { type: 'string' },
            schema: { type: 'object' },
            strict: nullable({ type: 'boolean' }),
          },
        },
      },
    },
  ],
};

/** Most choices (`n`) one request may ask for. */
export const MAX_CHOICES = 8;

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
      stream: limits.streaming
        ? { ...nullable({ type: 'boolean' }), description: 'true: the answer as server-sent events.' }
        : { description: 'Only false is supported.', anyOf: [{ const: false }, { type: 'null' }] },
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
          { type: 'array', maxItems: LIST_LIMITS.stop, items: { type: 'string', minLength: 1 } },
        ],
      }),
      user: nullable(shortString),
      tools: nullable({ type: 'array', maxItems: LIST_LIMITS.tools, items: toolSchema }),
      tool_choice: nullable({
        anyOf: [
          { enum: ['none', 'auto', 'required'] },
          {
            type: 'object',
            required: ['type', 'function'],
            properties: {
              type: { const: 'function' },
              function: { type: 'object', required: ['name'], properties: { name: functionName } },
            },
          },
        ],
      }),
      parallel_tool_calls: nullable({ type: 'boolean' }),
      functions: {
        ...nullable({ type: 'array', minItems: 1, maxItems: LIST_LIMITS.tools, items: functionSchema }),
        description: 'Legacy form of tools.',
      },
      function_call: {
        ...nullable({
          anyOf: [
            { enum: ['none', 'auto'] },
            { type: 'object', required: ['name'], properties: { name: functionName } },
          ],
        }),
        description: 'Legacy form of tool_choice.',
      },
      response_format: nullable(responseFormatSchema),
      n: nullable({ type: 'integer', minimum: 1, maximum: MAX_CHOICES }),
      logprobs: nullable({ type: 'boolean' }),
      top_logprobs: nullable({ type: 'integer', minimum: 0, maximum: 20 }),
      reasoning_effort: nullable({ enum: ['none', 'minimal', 'low', 'medium', 'high', 'xhigh'] }),
      logit_bias: nullable({
        type: 'object',
        maxProperties: LIST_LIMITS.logitBias,
        additionalProperties: { type: 'number', minimum: -100, maximum: 100 },
      }),
      metadata: nullable({
        type: 'object',
        maxProperties: LIST_LIMITS.metadata,
        additionalProperties: { type: 'string', maxLength: 512 },
      }),
      modalities: nullable({
        type: 'array',
        maxItems: LIST_LIMITS.modalities,
        items: { enum: ['text', 'audio'] },
      }),
      audio: nullable({ type: 'object' }),
      prediction: nullable({ type: 'object' }),
      service_tier: nullable(shortString),
      store: nullable({ type: 'boolean' }),
      prompt_cache_key: nullable({ type: 'string', maxLength: 1024 }),
      safety_identifier: nullable(shortString),
      verbosity: nullable({ enum: ['low', 'medium', 'high'] }),
      web_search_options: nullable({ type: 'object' }),
      stream_options: nullable({
        type: 'object',
        properties: { include_usage: nullable({ type: 'boolean' }) },
      }),
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
      maxItems: MAX_CHOICES,
      items: {
        type: 'object',
        required: ['index', 'message', 'finish_reason'],
        properties: {
          index: { type: 'integer', minimum: 0 },
          message: {
            type: 'object',
            required: ['role', 'content'],
            properties: {
              role: { const: 'assistant' },
              content: { anyOf: [{ type: 'string' }, { type: 'null' }] },
              refusal: { type: 'string' },
              tool_calls: { type: 'array', items: toolCallSchema },
              function_call: {
                type: 'object',
                required: ['name', 'arguments'],
                properties: { name: { type: 'string' }, arguments: { type: 'string' } },
              },
            },
          },
          logprobs: { anyOf: [{ type: 'object' }, { type: 'null' }] },
          finish_reason: { enum: ['stop', 'length', 'content_filter', 'tool_calls', 'function_call'] },
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
        prompt_tokens_details: {
          type: 'object',
          description:
            'The parts of prompt_tokens the upstream read from its cache (cached_tokens) and wrote to it (cache_write_tokens), each billed at its own price.',
          properties: {
            cached_tokens: { type: 'integer', minimum: 0 },
            cache_write_tokens: { type: 'integer', minimum: 0 },
          },
        },
        completion_tokens_details: {
          type: 'object',
          properties: { reasoning_tokens: { type: 'integer', minimum: 0 } },
        },
        cost: {
          ...money,
          description:
            'The amount charged for the call in US dollars, as its exact decimal: the field to sum (meta.cost.total is input + output as numbers).',
        },
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
        alias_of: {
          type: 'string',
          description: 'On the entry of a MODEL_ALIASES name or prefix* pattern: the model it is served by.',
        },
      },
    },
  },
};

export const modelListSchema: Schema = {
  type: 'object',
  required: ['object', 'data', 'streaming'],
  properties: {
    object: { const: 'list' },
    data: { type: 'array', items: modelSchema },
    streaming: { type: 'boolean', description: 'Whether `stream: true` is served (STREAMING=on).' },
  },
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
    'limit',
    'expires_at',
    'allowed',
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
      required: ['requests_per_minute', 'concurrent_requests', 'tokens_per_minute'],
      properties: {
        requests_per_minute: nullableLimit,
        concurrent_requests: nullableLimit,
        tokens_per_minute: nullableLimit,
      },
    },
    limit: {
      anyOf: [
        { type: 'null' },
        {
          type: 'object',
          required: ['amount', 'remaining', 'reset', 'resets_at'],
          properties: {
            amount: money,
            remaining: money,
            reset: { enum: ['daily', 'weekly', 'monthly', 'never'] },
            resets_at: { anyOf: [{ type: 'integer' }, { type: 'null' }] },
          },
        },
      ],
    },
    expires_at: { anyOf: [{ type: 'integer' }, { type: 'null' }] },
    allowed: { anyOf: [{ type: 'null' }, { type: 'array', items: { type: 'string' } }] },
  },
};
