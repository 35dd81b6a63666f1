import type { ErrorCode } from '../../errors.js';

type Schema = Record<string, unknown>;

/** The error codes `POST /responses` can answer with (docs/errors.md). */
const RESPONSES_ERRORS: ErrorCode[] = [
  'missing_api_key',
  'invalid_api_key',
  'key_expired',
  'insufficient_balance',
  'key_limit_exceeded',
  'model_not_allowed',
  'streaming_not_supported',
  'invalid_request',
  'unsupported_parameter',
  'invalid_json',
  'invalid_provider',
  'model_provider_mismatch',
  'upstream_rejected',
  'model_not_found',
  'request_too_large',
  'unsupported_media_type',
  'rate_limit_exceeded',
  'internal_error',
  'provider_error',
  'provider_unavailable',
  'no_provider_available',
  'service_unavailable',
  'provider_timeout',
  'idempotency_in_progress',
  'idempotency_key_reused',
];

const usageSchema: Schema = {
  type: 'object',
  required: [
    'input_tokens',
    'input_tokens_details',
    'output_tokens',
    'output_tokens_details',
    'total_tokens',
    'cost',
  ],
  properties: {
    input_tokens: { type: 'integer', minimum: 0 },
    input_tokens_details: {
      type: 'object',
      required: ['cached_tokens'],
      properties: { cached_tokens: { type: 'integer', minimum: 0 } },
    },
    output_tokens: { type: 'integer', minimum: 0 },
    output_tokens_details: {
      type: 'object',
      required: ['reasoning_tokens'],
      properties: { reasoning_tokens: { type: 'integer', minimum: 0 } },
    },
    total_tokens: { type: 'integer', minimum: 0 },
    cost: { type: 'number', description: 'USD charged for the call (as `usage.cost` on the chat door).' },
  },
};

/** The `response` object of a plain call (docs/api.md, "Responses"). */
export const responseSchema: Schema = {
  type: 'object',
  required: ['id', 'object', 'created_at', 'status', 'model', 'output', 'usage', 'meta'],
  properties: {
    id: { type: 'string', pattern: '^resp_' },
    object: { const: 'response' },
    created_at: { type: 'integer' },
    status: { enum: ['completed', 'incomplete'] },
    incomplete_details: {
      anyOf: [
        { type: 'object', properties: { reason: { enum: ['max_output_tokens', 'content_filter'] } } },
        { type: 'null' },
      ],
    },
    model: { type: 'string' },
    output: {
      type: 'array',
      items: {
        type: 'object',
        required: ['type', 'id'],
        properties: { type: { enum: ['message', 'function_call', 'reasoning'] }, id: { type: 'string' } },
      },
    },
    store: { const: false },
    usage: usageSchema,
    meta: {
      type: 'object',
      required: ['provider', 'cost', 'balance', 'duration_ms'],
      properties: {
        provider: { type: 'string' },
        cost: { type: 'object' },
        balance: { type: 'number' },
        duration_ms: { type: 'integer' },
      },
    },
  },
};

/** The request, loosely: the door checks it field by field (src/api/responses/read-request.ts). */
const requestSchema: Schema = {
  type: 'object',
  required: ['input'],
  properties: {
    model: { type: 'string' },
    input: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'object' } }] },
    instructions: { type: 'string' },
    tools: { type: 'array', items: { type: 'object' } },
    max_output_tokens: { type: 'integer' },
    stream: { type: 'boolean' },
    store: { const: false },
  },
};

/** `paths` entries of the OpenAPI document for this door; `errorResponses` is the document's own. */
export function responsesPaths(
  errorResponses: (codes: readonly ErrorCode[]) => Record<string, Schema>,
  headers: Schema,
): Record<string, Schema> {
  return {
    '/responses': {
      post: {
        operationId: 'createResponse',
        summary:
          'Create a response in the OpenAI Responses format (typed server-sent events with `stream: true` when STREAMING=on), billed as a chat completion.',
        requestBody: { required: true, content: { 'application/json': { schema: requestSchema } } },
        responses: {
          '200': {
            description: 'The response, with `usage.cost` and `meta` (provider, cost, balance, duration).',
            headers,
            content: { 'application/json': { schema: responseSchema } },
          },
          ...errorResponses(RESPONSES_ERRORS),
        },
      },
    },
  };
}
