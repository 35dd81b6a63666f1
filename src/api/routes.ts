import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AuthContext, Authenticator } from '../auth/authenticate.js';
import type { Config } from '../config/index.js';
import { GatewayError } from '../errors.js';
import type { Gateway } from '../gateway/gateway.js';
import { newCompletionId } from '../gateway/ids.js';
import { chatCompletionBody } from './chat-completion-body.js';
import { validateChatRequest } from './validate-chat-request.js';

declare module 'fastify' {
  interface FastifyRequest {
    auth: AuthContext | undefined;
    startedAt: number;
  }
}

export interface ApiDeps {
  config: Config;
  authenticator: Authenticator;
  gateway: Gateway;
}

function requireAuth(request: FastifyRequest): AuthContext {
  if (!request.auth) throw new Error('route reached without authentication');
  return request.auth;
}

/** The public `/api/v1` routes. Handlers are thin: parse → one pipeline call → serialize. */
export async function apiRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  app.decorateRequest('auth', undefined);
  app.decorateRequest('startedAt', 0);

  // A process-wide cap on requests in flight: past it, shed at once with 503 instead of queueing.
  let inFlight = 0;
  app.addHook('onRequest', async (request, reply) => {
    request.startedAt = Date.now();
    if (inFlight >= deps.config.maxConcurrentRequests) {
      throw new GatewayError('service_unavailable', 'The gateway is at capacity; retry shortly.', {
        retryAfterSeconds: 1,
      });
    }
    inFlight++;
    reply.raw.once('close', () => {
      inFlight--;
    });
    // Auth runs before the body is read or parsed (DESIGN.md precedence: 401 before 400/413/415).
    request.auth = await deps.authenticator.authenticate(request.headers.authorization);
  });

  app.post('/chat/completions', async (request, reply) => {
    const auth = requireAuth(request);
    const chatRequest = validateChatRequest(request.body, deps.config);
    let clientGone = false;
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) clientGone = true;
    });
    const completion = await deps.gateway.complete(
      {
        requestId: newCompletionId(),
        accountId: auth.accountId,
        keyId: auth.keyId,
        startedAt: request.startedAt,
        clientGone: () => clientGone,
      },
      chatRequest,
    );
    return reply.code(200).send(chatCompletionBody(completion));
  });

  app.route({
    method: ['GET', 'PUT', 'DELETE', 'PATCH'],
    url: '/chat/completions',
    handler: async (request) => {
      throw new GatewayError('method_not_allowed', `Method ${request.method} is not allowed here; use POST.`);
    },
  });
}
