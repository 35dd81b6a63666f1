import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Authenticator } from '../auth/authenticate.js';
import type { CodeRedemption } from '../auth/code-redemption.js';
import type { Config } from '../config/index.js';
import { GatewayError, modelNotServed } from '../errors.js';
import type { Gateway } from '../gateway/gateway.js';
import type { ChatRequest, RequestContext, StreamOutcome } from '../gateway/types.js';
import type { ProviderName } from '../providers/types.js';
import { admitted, callContext, registerAdmission } from './admission.js';
import { chatCompletionBody } from './chat-completion-body.js';
import { idempotencyOf } from './idempotency.js';
import type { InFlight } from './in-flight.js';
import { keyInfoBody } from './key-info-body.js';
import type { KeyLimiter } from './key-limits.js';
import { messagesRoutes } from './messages/messages-routes.js';
import { aliasOf } from './model-aliases.js';
import { aliasBody, modelBody, modelListBody } from './models-body.js';
import { redeemRoute } from './redeem-route.js';
import { responsesRoutes } from './responses/routes.js';
import { SseResponse } from './sse-response.js';
import { toGatewayError } from './to-gateway-error.js';
import { createChatRequestValidator } from './validate-chat-request.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The provider a chat completion was routed to (undefined when refused before routing); for metrics. */
    provider: ProviderName | undefined;
  }
}

export interface ApiDeps {
  config: Config;
  authenticator: Authenticator;
  gateway: Gateway;
  inFlight: InFlight;
  keyLimiter: KeyLimiter;
  /** Top-up code redemptions (`POST /credits/redeem`). */
  codes: CodeRedemption;
}

/**
 * A streamed answer: until its first delta a failure is an ordinary error answer; after it, the stream
 * ends with an error event. The handler returns once the stream has ended and the call is settled.
 */
export async function streamAnswer(
  deps: Pick<ApiDeps, 'config' | 'gateway'>,
  reply: FastifyReply,
  context: RequestContext,
  chatRequest: ChatRequest,
  includeUsage: boolean,
): Promise<void> {
  const sink = new SseResponse(
    reply,
    {
      id: context.requestId,
      created: Math.floor(context.startedAt / 1000),
      includeUsage,
      legacyFunctions: chatRequest.legacyFunctions,
    },
    // STREAM_TIMEOUT_MS bounds the whole stream, waits for a slow client included.
    {
      stallTimeoutMs: deps.config.streamStallTimeoutMs,
      deadline: context.startedAt + deps.config.streamTimeoutMs,
    },
  );
  let outcome: StreamOutcome;
  try {
    outcome = await deps.gateway.stream(context, chatRequest, sink);
  } catch (err) {
    if (!sink.begun) throw err;
    reply.log.error({ err }, 'streamed answer failed after it began');
    sink.fail(toGatewayError(err));
    return;
  }
  sink.finish(outcome);
}

/** The public `/api/v1` routes. Handlers are thin: parse → one pipeline call → serialize. */
export async function apiRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  const validateChatRequest = createChatRequestValidator(deps.config);
  app.decorateRequest('provider', undefined);
  registerAdmission(app, deps);

  app.post('/chat/completions', async (request, reply) => {
    const caller = admitted(request);
    caller.exchange.enterHandler();
    let context: RequestContext | undefined;
    try {
      const chatRequest = validateChatRequest(request.body);
      const idempotency = idempotencyOf(request);
      context = callContext(request, caller);
      if (idempotency) context.idempotency = idempotency;
      if (chatRequest.stream) {
        context.stream = true;
        await streamAnswer(deps, reply, context, chatRequest, chatRequest.stream.includeUsage);
        return reply;
      }
      const completion = await deps.gateway.complete(context, chatRequest);
      // Set before send: the metrics onResponse hook may run before `finally` does.
      request.provider = context.provider;
      if (completion.replayed) reply.header('idempotent-replayed', 'true');
      if (completion.droppedParams.length > 0) {
        reply.header('x-tollgate-dropped-params', completion.droppedParams.join(','));
      }
      // As bytes: a string body would be measured for Content-Length and then encoded a second time.
      const body = Buffer.from(JSON.stringify(chatCompletionBody(completion)), 'utf8');
      return reply.code(200).type('application/json; charset=utf-8').send(body);
    } finally {
      request.provider = context?.provider;
      caller.exchange.finish();
    }
  });

  app.get('/models', async () =>
    modelListBody(deps.gateway.providers(), deps.config.modelAliases, deps.config.streaming),
  );

  // Model names may contain "/" (e.g. openai/gpt-oss-120b): the id is the rest of the path.
  app.get('/models/*', async (request) => {
    const raw = (request.params as { '*': string })['*'];
    let id: string;
    try {
      id = decodeURIComponent(raw);
    } catch {
      throw modelNotServed(raw);
    }
    const alias = aliasOf(id, deps.config.modelAliases);
    return alias === undefined
      ? modelBody(deps.gateway.provider(id))
      : aliasBody(id, deps.gateway.provider(alias));
  });

  app.get('/key', async (request) => {
    const { auth } = admitted(request);
    const [key, summary] = await Promise.all([
      deps.authenticator.keyInfo(auth),
      deps.gateway.summary(auth.accountId),
    ]);
    if (!key || !summary) throw new GatewayError('invalid_api_key', 'Invalid API key');
    return keyInfoBody(key, summary, deps.config);
  });

  redeemRoute(app, deps.codes);
  app.register(messagesRoutes, { config: deps.config, gateway: deps.gateway });
  responsesRoutes(app, deps);

  app.route({
    method: ['GET', 'PUT', 'DELETE', 'PATCH'],
    url: '/chat/completions',
    handler: async (request) => {
      throw new GatewayError('method_not_allowed', `Method ${request.method} is not allowed here; use POST.`);
    },
  });
}
