import { ERROR_CODES, type ErrorCode } from '../errors.js';
import { creditSchema, REDEEM_ERRORS, redeemRequestSchema } from './redeem-route.js';
import { responsesPaths } from './responses/openapi-paths.js';
import {
  chatCompletionSchema,
  chatRequestSchema,
  errorSchema,
  keyInfoSchema,
  messageSchema,
  modelListSchema,
  modelSchema,
  type RequestLimits,
} from './schemas.js';

type Schema = Record<string, unknown>;

const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });

/** Which error codes each operation can answer with (see docs/errors.md). */
const CHAT_ERRORS: ErrorCode[] = [
  'missing_api_key',
  'invalid_api_key',
  'key_expired',
  'insufficient_balance',
  'key_limit_exceeded',
  'model_not_allowed',
  'invalid_messages',
  'streaming_not_supported',
  'invalid_request',
  'invalid_json',
  'invalid_provider',
  'model_provider_mismatch',
  'upstream_rejected',
  'model_not_found',
  'idempotency_in_progress',
  'idempotency_key_reused',
  'request_too_large',
  'unsupported_media_type',
  'rate_limit_exceeded',
  'internal_error',
  'provider_error',
  'provider_unavailable',
  'no_provider_available',
  'service_unavailable',
  'provider_timeout',
];
const AUTHED_GET_ERRORS: ErrorCode[] = [
  'missing_api_key',
  'invalid_api_key',
  'key_expired',
  'rate_limit_exceeded',
  'internal_error',
  'service_unavailable',
];

const headers = {
  'x-request-id': {
    description: 'The request id (echoed from the request when it sent a well-formed one).',
    schema: { type: 'string' },
  },
};
const errorHeaders = {
  ...headers,
  'x-should-retry': {
    description: 'Whether retrying the same request may succeed (as the OpenAI SDKs read it).',
    schema: { enum: ['true', 'false'] },
  },
  'retry-after': {
    description: 'Seconds to wait before retrying (429, and 503 when known).',
    schema: { type: 'string' },
  },
};

function errorResponses(codes: readonly ErrorCode[]): Record<string, Schema> {
  const byStatus = new Map<number, string[]>();
  for (const code of codes) {
    const { status } = ERROR_CODES[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const out: Record<string, Schema> = {};
  for (const [status, list] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    out[String(status)] = {
      description: `Error: ${list.join(', ')}.`,
      headers: errorHeaders,
      content: { 'application/json': { schema: ref('Error') } },
    };
  }
  return out;
}

const json = (schema: Schema) => ({ 'application/json': { schema } });

/**
 * The OpenAPI 3.1 document of the public API, served at `/api/v1/openapi.json`. Its schemas are the very
 * objects the server validates requests with (validate-chat-request.ts compiles `chatRequestSchema`),
 * and the test suite checks every response it sees against it.
 */
export function buildOpenApi(limits: RequestLimits, version: string): Schema {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Tollgate API',
      version,
      description:
        'OpenAI-compatible chat completions, billed per token against a prepaid balance. ' +
        'Every error has the body {"error": {"message", "type", "code"}}.',
    },
    servers: [{ url: '/api/v1' }],
    security: [{ apiKey: [] }],
    paths: {
      '/chat/completions': {
        post: {
          operationId: 'createChatCompletion',
          summary:
            'Create a chat completion (complete JSON; server-sent events with `stream: true` when STREAMING=on), billed to the key’s account.',
          parameters: [
            {
              name: 'Idempotency-Key',
              in: 'header',
              required: false,
              description:
                'Repeat a request with the same key and body within 24 h to get the first answer back, never charged twice.',
              schema: { type: 'string', pattern: '^[\\x21-\\x7e]{1,255}$' },
            },
          ],
          requestBody: { required: true, content: json(ref('ChatCompletionRequest')) },
          responses: {
            '200': {
              description:
                'The completion, with `usage.cost` and `meta` (provider, cost, balance, duration).',
              headers: {
                ...headers,
                'idempotent-replayed': {
                  description: 'Present (true) when this is the stored answer to an earlier request.',
                  schema: { const: 'true' },
                },
              },
              content: json(ref('ChatCompletion')),
            },
            ...errorResponses(CHAT_ERRORS),
          },
        },
      },
      '/models': {
        get: {
          operationId: 'listModels',
          summary:
            'Every provider and model, with prices, auto-rotation membership and whether it is active.',
          responses: {
            '200': { description: 'The list.', headers, content: json(ref('ModelList')) },
            ...errorResponses(AUTHED_GET_ERRORS),
          },
        },
      },
      '/models/{model}': {
        get: {
          operationId: 'retrieveModel',
          summary: 'One entry of the list, by model name or provider name.',
          parameters: [
            {
              name: 'model',
              in: 'path',
              required: true,
              description: 'A model name (may contain "/") or a provider name.',
              schema: { type: 'string' },
            },
          ],
          responses: {
            '200': { description: 'The entry.', headers, content: json(ref('Model')) },
            ...errorResponses([...AUTHED_GET_ERRORS, 'model_not_found']),
          },
        },
      },
      '/key': {
        get: {
          operationId: 'getKey',
          summary: 'The calling key and its account: name, hint, balance, spend today and this month.',
          responses: {
            '200': { description: 'The key.', headers, content: json(ref('ApiKey')) },
            ...errorResponses(AUTHED_GET_ERRORS),
          },
        },
      },
      '/credits/redeem': {
        post: {
          operationId: 'redeemCode',
          summary: 'Redeem a top-up code: its amount is credited to the key’s account, once.',
          requestBody: { required: true, content: json(ref('RedeemCodeRequest')) },
          responses: {
            '200': { description: 'The credit.', headers, content: json(ref('Credit')) },
            ...errorResponses(REDEEM_ERRORS),
          },
        },
      },
      '/messages': {
        post: {
          operationId: 'createMessage',
          summary:
            'Anthropic Messages format (docs/api.md, "Anthropic Messages"): key as x-api-key or Bearer; errors as {"type":"error","error":{type,message,code}}.',
          requestBody: { required: true, content: json({ type: 'object' }) },
          responses: {
            '200': {
              description: 'An Anthropic `message` (or its server-sent events).',
              headers,
              content: json({ type: 'object' }),
            },
            ...errorResponses(CHAT_ERRORS),
          },
        },
      },
      '/messages/count_tokens': {
        post: {
          operationId: 'countMessageTokens',
          summary: 'An estimate of the input tokens of a Messages request.',
          requestBody: { required: true, content: json({ type: 'object' }) },
          responses: {
            '200': { description: '`{input_tokens}`.', headers, content: json({ type: 'object' }) },
            ...errorResponses(CHAT_ERRORS),
          },
        },
      },
      ...responsesPaths(errorResponses, headers),
      '/openapi.json': {
        get: {
          operationId: 'getOpenApi',
          summary: 'This document.',
          security: [],
          responses: { '200': { description: 'OpenAPI 3.1.', content: json({ type: 'object' }) } },
        },
      },
    },
    components: {
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'An `sk-svc-…` key from the dashboard.' },
      },
      schemas: {
        ChatCompletionRequest: chatRequestSchema(limits),
        Message: messageSchema,
        ChatCompletion: chatCompletionSchema,
        Model: modelSchema,
        ModelList: modelListSchema,
        ApiKey: keyInfoSchema,
        RedeemCodeRequest: redeemRequestSchema,
        Credit: creditSchema,
        Error: errorSchema,
      },
    },
  };
}
