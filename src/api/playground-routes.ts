import type { FastifyInstance, FastifyRequest } from 'fastify';
import { PLAYGROUND_KEY_ID } from '../auth/keys.js';
import { newCompletionId } from '../gateway/ids.js';
import type { RequestContext } from '../gateway/types.js';
import { atCapacity, Exchange } from './admission.js';
import { chatCompletionBody } from './chat-completion-body.js';
import { modelListBody } from './models-body.js';
import { type ApiDeps, streamAnswer } from './routes.js';
import { createChatRequestValidator } from './validate-chat-request.js';

export type PlaygroundDeps = Pick<ApiDeps, 'config' | 'gateway' | 'inFlight' | 'keyLimiter'>;

/** What the dashboard plugin gives the playground: the account of a request that passed its gate. */
export interface PlaygroundOptions {
  accountOf(request: FastifyRequest): string;
}

/**
 * The dashboard's playground (`/dashboard/api/playground`), registered inside the dashboard plugin so its
 * session and CSRF gate come first. A call here is a front door like `/api/v1/chat/completions`: the same
 * body and validation, the same in-flight slots and per-key limits (counted under the account's
 * playground), the same pipeline, hold and settle, billed to the signed-in account. Its usage rows carry
 * the key id `playground`, so they are told apart from any key's.
 */
export function playgroundRoutes(deps: PlaygroundDeps) {
  return async function playground(app: FastifyInstance, options: PlaygroundOptions): Promise<void> {
    const validateChatRequest = createChatRequestValidator(deps.config);

    app.get('/playground/models', async () =>
      modelListBody(deps.gateway.providers(), [], deps.config.streaming),
    );

    app.post('/playground/chat', async (request, reply) => {
      const accountId = options.accountOf(request);
      const startedAt = Date.now();
      if (deps.inFlight.full) throw atCapacity();
      const exchange = new Exchange(deps.inFlight, request, reply);
      try {
        exchange.holdKeySlot(await deps.keyLimiter.acquire(`${PLAYGROUND_KEY_ID}:${accountId}`));
        if (!exchange.enterProcess()) throw atCapacity();
        exchange.enterHandler();
        const chatRequest = validateChatRequest(request.body);
        const context: RequestContext = {
          requestId: newCompletionId(),
          accountId,
          keyId: PLAYGROUND_KEY_ID,
          startedAt,
          clientGone: () => exchange.clientGone,
        };
        if (chatRequest.stream) {
          context.stream = true;
          await streamAnswer(deps, reply, context, chatRequest, true);
          return reply;
        }
        const completion = await deps.gateway.complete(context, chatRequest);
        return chatCompletionBody(completion);
      } finally {
        exchange.finish();
      }
    });
  };
}
