import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Config } from '../../config/index.js';
import { GatewayError } from '../../errors.js';
import type { Gateway } from '../../gateway/gateway.js';
import type { RequestContext, StreamOutcome } from '../../gateway/types.js';
import { admitted, callContext } from '../admission.js';
import { idempotencyOf } from '../idempotency.js';
import { applyAlias } from '../model-aliases.js';
import { toGatewayError } from '../to-gateway-error.js';
import { type ResponsesRequest, readResponsesRequest } from './read-request.js';
import { responseBody, responseIdOf } from './response-body.js';
import { ResponsesSse } from './responses-sse.js';

/**
 * The OpenAI Responses door (docs/api.md, "Responses"): `POST /responses` read into the neutral
 * `ChatRequest`, served by the same call path as the chat door (the same hold, key limits, failover and
 * settle), and answered as a `response` object or its typed events. Registered inside the `/api/v1`
 * plugin, so its requests pass the same admission hooks.
 */
export function responsesRoutes(app: FastifyInstance, deps: { config: Config; gateway: Gateway }): void {
  const limits = {
    maxMessages: deps.config.maxMessages,
    maxTokensCeiling: deps.config.maxTokensCeiling,
    streaming: deps.config.streaming,
  };

  async function streamAnswer(
    reply: FastifyReply,
    context: RequestContext,
    read: ResponsesRequest,
  ): Promise<void> {
    const sink = new ResponsesSse(
      reply,
      {
        frame: {
          id: responseIdOf(context.requestId),
          createdAt: Math.floor(context.startedAt / 1000),
          echo: read.echo,
        },
        namespaced: read.namespaced,
        dropped: read.dropped,
      },
      {
        stallTimeoutMs: deps.config.streamStallTimeoutMs,
        deadline: context.startedAt + deps.config.streamTimeoutMs,
      },
    );
    let outcome: StreamOutcome;
    try {
      outcome = await deps.gateway.stream(context, read.chat, sink);
    } catch (err) {
      if (!sink.begun) throw err;
      reply.log.error({ err }, 'streamed response failed after it began');
      sink.fail(toGatewayError(err));
      return;
    }
    sink.finish(outcome);
  }

  app.post('/responses', async (request, reply) => {
    const caller = admitted(request);
    caller.exchange.enterHandler();
    let context: RequestContext | undefined;
    try {
      const read = readResponsesRequest(request.body, limits);
      applyAlias(read.chat, deps.config.modelAliases);
      const idempotency = idempotencyOf(request);
      context = callContext(request, caller);
      if (idempotency) context.idempotency = idempotency;
      if (read.chat.stream) {
        context.stream = true;
        await streamAnswer(reply, context, read);
        return reply;
      }
      const completion = await deps.gateway.complete(context, read.chat);
      request.provider = context.provider;
      if (completion.replayed) reply.header('idempotent-replayed', 'true');
      const dropped = [...read.dropped, ...completion.droppedParams];
      if (dropped.length > 0) reply.header('x-tollgate-dropped-params', dropped.join(','));
      const body = responseBody(
        completion,
        { id: responseIdOf(completion.id), createdAt: completion.created, echo: read.echo },
        read.namespaced,
      );
      return reply.code(200).type('application/json; charset=utf-8').send(JSON.stringify(body));
    } finally {
      request.provider = context?.provider;
      caller.exchange.finish();
    }
  });

  // Tollgate stores no responses: there is none to read, delete, cancel or list the items of.
  app.route({
    method: ['GET', 'DELETE', 'POST'],
    url: '/responses/*',
    handler: async () => {
      throw new GatewayError(
        'not_found',
        'Tollgate stores no responses (every response is store: false); there is none to read here.',
      );
    },
  });
  app.route({
    method: ['GET', 'PUT', 'DELETE', 'PATCH'],
    url: '/responses',
    handler: async (request) => {
      throw new GatewayError('method_not_allowed', `Method ${request.method} is not allowed here; use POST.`);
    },
  });
}
