import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Config } from '../../config/index.js';
import { GatewayError } from '../../errors.js';
import type { Gateway } from '../../gateway/gateway.js';
import type { ChatCompletion, RequestContext, StreamOutcome, StreamStart } from '../../gateway/types.js';
import type { ProviderName } from '../../providers/types.js';
import { admitted, callContext } from '../admission.js';
import { idempotencyOf } from '../idempotency.js';
import { applyAlias } from '../model-aliases.js';
import { toGatewayError } from '../to-gateway-error.js';
import { messagesBody } from './messages-body.js';
import { messagesErrorBody } from './messages-error.js';
import { MessagesStream } from './messages-stream.js';
import { type MessagesRequest, translateMessagesRequest } from './translate-messages-request.js';

export interface MessagesDeps {
  config: Config;
  gateway: Gateway;
}

/**
 * Routes the request's model: an alias (`MODEL_ALIASES`) names its provider; any other name must be one
 * the gateway serves ("auto", a provider name, a served model), else 404 saying so. Returns the provider
 * it resolves to when there is one.
 */
function routeModel(translated: MessagesRequest, deps: MessagesDeps): ProviderName | undefined {
  const model = translated.chat.model ?? 'auto';
  const alias = applyAlias(translated.chat, deps.config.modelAliases);
  if (alias !== undefined) return alias;
  if (model === 'auto') return undefined;
  return deps.gateway.provider(model).provider.name;
}

/** Fields only an Anthropic upstream carries, named when another one served. */
function droppedOf(
  deps: MessagesDeps,
  translated: MessagesRequest,
  provider: ProviderName,
  adapterDropped: string[],
): string[] {
  const passedThrough = deps.gateway.provider(provider).provider.wireFormat === 'anthropic';
  const names = new Set(adapterDropped);
  if (!passedThrough) for (const name of translated.droppedElsewhere) names.add(name);
  for (const beta of translated.droppedBetas) names.add(`anthropic-beta:${beta}`);
  return [...names];
}

/**
 * The Anthropic Messages door (docs/api.md, "Anthropic Messages"): `POST /messages` and
 * `POST /messages/count_tokens`, with errors in Anthropic's shape. Authentication, key limits, routing,
 * the hold, failover and the settle are the call path's.
 */
export async function messagesRoutes(app: FastifyInstance, deps: MessagesDeps): Promise<void> {
  app.setErrorHandler((err, request, reply) => {
    const error = toGatewayError(err);
    if (error.status >= 500 && !(err instanceof GatewayError))
      request.log.error({ err, code: error.code }, 'request failed');
    else request.log.info({ code: error.code, status: error.status }, 'request refused');
    if (error.retryAfterSeconds !== undefined) reply.header('retry-after', String(error.retryAfterSeconds));
    reply.header('x-should-retry', String(error.shouldRetry));
    return reply.code(error.status).type('application/json').send(messagesErrorBody(error));
  });

  async function stream(
    reply: FastifyReply,
    context: RequestContext,
    translated: MessagesRequest,
  ): Promise<void> {
    const sink = new MessagesStream(
      reply,
      { requestId: context.requestId },
      {
        stallTimeoutMs: deps.config.streamStallTimeoutMs,
        deadline: context.startedAt + deps.config.streamTimeoutMs,
      },
      (start: StreamStart) => droppedOf(deps, translated, start.provider, start.droppedParams),
    );
    let outcome: StreamOutcome;
    try {
      outcome = await deps.gateway.stream(context, translated.chat, sink);
    } catch (err) {
      if (!sink.begun) throw err;
      reply.log.error({ err }, 'streamed answer failed after it began');
      sink.fail(toGatewayError(err));
      return;
    }
    sink.finish(outcome);
  }

  app.post('/messages', async (request, reply) => {
    const caller = admitted(request);
    caller.exchange.enterHandler();
    let context: RequestContext | undefined;
    try {
      const translated = translateMessagesRequest(
        request.body,
        request.headers['anthropic-beta'],
        deps.config,
      );
      routeModel(translated, deps);
      const idempotency = idempotencyOf(request);
      context = callContext(request, caller);
      if (idempotency) context.idempotency = idempotency;
      if (translated.chat.stream) {
        context.stream = true;
        await stream(reply, context, translated);
        return reply;
      }
      const completion: ChatCompletion = await deps.gateway.complete(context, translated.chat);
      request.provider = context.provider;
      if (completion.replayed) reply.header('idempotent-replayed', 'true');
      const dropped = droppedOf(deps, translated, completion.provider, completion.droppedParams);
      if (dropped.length > 0) reply.header('x-tollgate-dropped-params', dropped.join(','));
      return reply
        .code(200)
        .type('application/json; charset=utf-8')
        .send(JSON.stringify(messagesBody(completion)));
    } finally {
      request.provider = context?.provider;
      caller.exchange.finish();
    }
  });

  app.post('/messages/count_tokens', async (request, reply) => {
    const { auth } = admitted(request);
    const body = request.body;
    // count_tokens takes no max_tokens: the translation is asked for the smallest one.
    const withCap =
      typeof body === 'object' && body !== null && !Array.isArray(body)
        ? { max_tokens: 1, ...body, stream: false }
        : body;
    const translated = translateMessagesRequest(withCap, request.headers['anthropic-beta'], deps.config);
    const provider =
      routeModel(translated, deps) ?? deps.gateway.providers().find((status) => status.active)?.provider.name;
    if (provider === undefined) {
      throw new GatewayError(
        'no_provider_available',
        'No provider is available for this request right now.',
        {
          retryAfterSeconds: 30,
        },
      );
    }
    const { tokens, source } = await deps.gateway.countPromptTokens(
      translated.chat,
      provider,
      auth.accountId,
    );
    // Whose count it is: the upstream's own, or the gateway's estimate (an upstream without one).
    reply.header('x-tollgate-token-count', source);
    return { input_tokens: tokens };
  });
}
