import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AuthContext, Authenticator } from '../auth/authenticate.js';
import type { CodeRedemption } from '../auth/code-redemption.js';
import type { Config } from '../config/index.js';
import { GatewayError } from '../errors.js';
import type { Gateway } from '../gateway/gateway.js';
import { newCompletionId } from '../gateway/ids.js';
import type { ChatRequest, RequestContext, StreamOutcome } from '../gateway/types.js';
import type { ProviderName } from '../providers/types.js';
import { chatCompletionBody } from './chat-completion-body.js';
import type { InFlight } from './in-flight.js';
import { keyInfoBody } from './key-info-body.js';
import type { KeyLimiter } from './key-limits.js';
import { modelBody, modelListBody } from './models-body.js';
import { redeemRoute } from './redeem-route.js';
import { responsesRoutes } from './responses/routes.js';
import { SseResponse } from './sse-response.js';
import { toGatewayError } from './to-gateway-error.js';
import { createChatRequestValidator } from './validate-chat-request.js';

declare module 'fastify' {
  interface FastifyRequest {
    auth: AuthContext | undefined;
    startedAt: number;
    /** Ends this request's in-flight slots (process and key); safe to call more than once. */
    finish: () => void;
    /** Called by a handler that takes over ending the slots (after its upstream call is settled). */
    enterHandler: () => void;
    /** Takes the process-wide in-flight slot, once the body is in; false when the process is at its cap. */
    enterProcess: () => boolean;
    /** Whether the client closed the connection before the whole answer was written to it. */
    clientGone: boolean;
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

const noop = (): void => {};

function atCapacity(): GatewayError {
  return new GatewayError('service_unavailable', 'The gateway is at capacity; retry shortly.', {
    retryAfterSeconds: 1,
  });
}

/**
 * A body as a Buffer of its UTF-8: sent as a string, it would be measured for Content-Length
 * (`Buffer.byteLength`) and encoded again on the socket after Node copies the headers in front of it.
 * `Buffer.from` sizes the buffer exactly: a buffer of three bytes per character, cut to what was written,
 * was slower for a usual answer, as it drew three times the memory from Node's buffer pool and made a
 * second view for the cut.
 */
function utf8Bytes(text: string): Buffer {
  return Buffer.from(text, 'utf8');
}

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

function requireAuth(request: FastifyRequest): AuthContext {
  if (!request.auth) throw new Error('route reached without authentication');
  return request.auth;
}

function idempotencyOf(request: FastifyRequest): { key: string; bodyHash: string } | undefined {
  const header = request.headers['idempotency-key'];
  if (header === undefined) return undefined;
  if (typeof header !== 'string' || !IDEMPOTENCY_KEY.test(header)) {
    throw new GatewayError(
      'invalid_request',
      'Idempotency-Key must be 1 to 255 printable ASCII characters without spaces.',
      { param: 'Idempotency-Key' },
    );
  }
  // The parsed body re-serialised: the same request body always gives the same hash.
  const bodyHash = createHash('sha256').update(JSON.stringify(request.body)).digest('hex');
  return { key: header, bodyHash };
}

/** The public `/api/v1` routes. Handlers are thin: parse → one pipeline call → serialize. */
export async function apiRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  const validateChatRequest = createChatRequestValidator(deps.config);
  app.decorateRequest('auth', undefined);
  app.decorateRequest('startedAt', 0);
  app.decorateRequest('finish', () => {});
  app.decorateRequest('enterHandler', () => {});
  app.decorateRequest('enterProcess', () => true);
  app.decorateRequest('provider', undefined);
  app.decorateRequest('clientGone', false);

  // A callback hook, not an async one: with the key in the cache and no shared rate limit (the usual
  // case) authentication and admission finish synchronously, without a promise per step.
  app.addHook('onRequest', (request, reply, done) => {
    request.startedAt = Date.now();
    // A process-wide cap on requests in flight: past it, shed at once instead of queueing, before any
    // authentication work. This only looks: the slot itself is taken once the body is in (preHandler),
    // so a client sending its body slowly holds none.
    if (deps.inFlight.full) {
      done(atCapacity());
      return;
    }
    let leaveKey: () => void = noop;
    let leaveProcess: () => void = noop;
    let finished = false;
    request.finish = () => {
      finished = true;
      leaveKey();
      leaveProcess();
    };
    request.enterProcess = () => {
      // The exchange already ended (its client left): a slot taken now would never be given back.
      if (finished) return true;
      const leave = deps.inFlight.tryEnter();
      if (!leave) return false;
      leaveProcess = leave;
      return true;
    };
    // Ends the slots when the exchange ends without reaching the handler (errors, aborted uploads);
    // a request in the handler ends them itself, once its upstream call is settled. The response's
    // 'close' also tells the handler whether the client left before the answer was written.
    // `on`, not `once`: each of these objects emits 'close' once, both listeners are idempotent, and `once`
    // would bind a wrapper and remove it again on every request.
    let inHandler = false;
    request.raw.on('close', () => {
      if (!inHandler) request.finish();
    });
    const response = reply.raw;
    response.on('close', () => {
      if (!response.writableFinished) request.clientGone = true;
      if (!inHandler) request.finish();
    });
    request.enterHandler = () => {
      inHandler = true;
    };

    // Auth runs before the body is read or parsed: 401 comes before 400/413/415 (docs/errors.md, the
    // order of the checks).
    const admit = (auth: AuthContext): void => {
      request.auth = auth;
      let leave: (() => void) | Promise<() => void>;
      try {
        leave = deps.keyLimiter.acquire(auth.keyId);
      } catch (err) {
        done(err as Error);
        return;
      }
      if (leave instanceof Promise) {
        leave.then((l) => {
          leaveKey = l;
          // The exchange ended (the client left) while the shared limit was asked: end the slot now.
          if (finished) l();
          countBodyForKey(auth.keyId);
        }, done);
      } else {
        leaveKey = leave;
        countBodyForKey(auth.keyId);
      }
    };
    // A body still arriving counts against the key too (src/http/pending-bodies.ts); past its cap the
    // connection is closed with the 429, like past the address's.
    const countBodyForKey = (keyId: string): void => {
      try {
        request.pendingBody?.forKey(keyId);
      } catch (err) {
        reply.header('connection', 'close');
        done(err as Error);
        return;
      }
      done();
    };
    let auth: AuthContext | Promise<AuthContext>;
    try {
      auth = deps.authenticator.authenticate(request.headers.authorization);
    } catch (err) {
      done(err as Error);
      return;
    }
    if (auth instanceof Promise) auth.then(admit, done);
    else admit(auth);
  });

  // The process-wide slot, taken once the body is in and parsed: body errors (400/413/415) come before a
  // 503 at capacity. Nothing asynchronous runs between this hook and the handler.
  app.addHook('preHandler', (request, _reply, done) => {
    if (request.enterProcess()) done();
    else done(atCapacity());
  });

  /**
   * A streamed answer: until its first delta a failure is an ordinary error answer; after it, the stream
   * ends with an error event. The handler returns once the stream has ended and the call is settled.
   */
  async function streamAnswer(
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

  app.post('/chat/completions', async (request, reply) => {
    request.enterHandler();
    let context: RequestContext | undefined;
    try {
      const auth = requireAuth(request);
      const chatRequest = validateChatRequest(request.body);
      const idempotency = idempotencyOf(request);
      context = {
        requestId: newCompletionId(),
        accountId: auth.accountId,
        keyId: auth.keyId,
        startedAt: request.startedAt,
        clientGone: () => request.clientGone,
      };
      if (idempotency) context.idempotency = idempotency;
      if (chatRequest.stream) {
        context.stream = true;
        await streamAnswer(reply, context, chatRequest, chatRequest.stream.includeUsage);
        return reply;
      }
      const completion = await deps.gateway.complete(context, chatRequest);
      // Set before send: the metrics onResponse hook may run before `finally` does.
      request.provider = context.provider;
      if (completion.replayed) reply.header('idempotent-replayed', 'true');
      if (completion.droppedParams.length > 0) {
        reply.header('x-tollgate-dropped-params', completion.droppedParams.join(','));
      }
      return reply
        .code(200)
        .type('application/json; charset=utf-8')
        .send(utf8Bytes(JSON.stringify(chatCompletionBody(completion))));
    } finally {
      request.provider = context?.provider;
      request.finish();
    }
  });

  app.get('/models', async () => modelListBody(deps.gateway.providers(), deps.config.streaming));

  // Model names may contain "/" (e.g. openai/gpt-oss-120b): the id is the rest of the path.
  app.get('/models/*', async (request) => {
    const raw = (request.params as { '*': string })['*'];
    let id: string;
    try {
      id = decodeURIComponent(raw);
    } catch {
      throw new GatewayError('model_not_found', `The model "${raw.slice(0, 200)}" does not exist.`, {
        param: 'model',
      });
    }
    return modelBody(deps.gateway.provider(id));
  });

  app.get('/key', async (request) => {
    const auth = requireAuth(request);
    const [key, summary] = await Promise.all([
      deps.authenticator.keyInfo(auth),
      deps.gateway.summary(auth.accountId),
    ]);
    if (!key || !summary) throw new GatewayError('invalid_api_key', 'Invalid API key');
    return keyInfoBody(key, summary, deps.config);
  });

  redeemRoute(app, deps.codes);
  responsesRoutes(app, deps);

  app.route({
    method: ['GET', 'PUT', 'DELETE', 'PATCH'],
    url: '/chat/completions',
    handler: async (request) => {
      throw new GatewayError('method_not_allowed', `Method ${request.method} is not allowed here; use POST.`);
    },
  });
}
