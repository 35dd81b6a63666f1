import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AuthContext, Authenticator } from '../auth/authenticate.js';
import { GatewayError } from '../errors.js';
import { newCompletionId } from '../gateway/ids.js';
import type { RequestContext } from '../gateway/types.js';
import type { InFlight } from './in-flight.js';
import type { KeyLimiter } from './key-limits.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who is calling; set by admission before any handler runs. */
    auth: AuthContext | undefined;
    startedAt: number;
    /** The admitted request's slots and whether its client left; set by admission. */
    exchange: Exchange | undefined;
  }
}

export interface AdmissionDeps {
  authenticator: Authenticator;
  inFlight: InFlight;
  keyLimiter: KeyLimiter;
}

export function atCapacity(): GatewayError {
  return new GatewayError('service_unavailable', 'The gateway is at capacity; retry shortly.', {
    retryAfterSeconds: 1,
  });
}

/**
 * The in-flight slots one request holds (its key's and the process's) and whether its client left.
 * The slots end when the exchange ends: by the handler once its upstream call is settled, or, for a
 * request that never reaches the handler (a refusal, an aborted upload), when its connection closes.
 */
export class Exchange {
  /** Whether the client closed the connection before the whole answer was written to it. */
  clientGone = false;
  /** Told the tokens of the call once settled, when its key has a tokens-per-minute limit. */
  tokensSettled: ((tokens: number) => void) | undefined = undefined;
  private leaveKey: (() => void) | undefined;
  private leaveProcess: (() => void) | undefined;
  private finished = false;
  private inHandler = false;

  constructor(
    private readonly inFlight: InFlight,
    request: FastifyRequest,
    reply: FastifyReply,
  ) {
    // Each of these objects emits 'close' once; both listeners are idempotent.
    request.raw.on('close', () => {
      if (!this.inHandler) this.finish();
    });
    const response = reply.raw;
    response.on('close', () => {
      if (!response.writableFinished) this.clientGone = true;
      if (!this.inHandler) this.finish();
    });
  }

  /** Keeps the key's slot until the exchange ends; ends it at once if the exchange already has. */
  holdKeySlot(leave: () => void): void {
    if (this.finished) leave();
    else this.leaveKey = leave;
  }

  /** Takes the process-wide slot; false when the process is at its cap. */
  enterProcess(): boolean {
    // The exchange already ended (its client left): a slot taken now would never be given back.
    if (this.finished) return true;
    const leave = this.inFlight.tryEnter();
    if (!leave) return false;
    this.leaveProcess = leave;
    return true;
  }

  /** The handler takes over ending the slots (it calls `finish` once its upstream call is settled). */
  enterHandler(): void {
    this.inHandler = true;
  }

  /** Ends the slots; safe to call more than once. */
  finish(): void {
    this.finished = true;
    this.leaveKey?.();
    this.leaveProcess?.();
  }
}

/**
 * The admission of every request of the plugin `app`, in the order of docs/errors.md ("the order of the
 * checks"):
 * 1. the process at its in-flight cap → 503, before any authentication work;
 * 2. the Bearer key → 401, before the body is read, so 401 comes before 400/413/415;
 * 3. the key's limits — requests per minute (`KEY_RATE_LIMIT_RPM` and its own), its own tokens per
 *    minute, requests in flight — → 429;
 * 4. the key's bodies still arriving (src/http/pending-bodies.ts) → 429, closing the connection like
 *    past the address's cap;
 * 5. once the body is in and parsed, the process-wide slot → 503; body errors come before it.
 * Steps 1 to 4 run as the request's headers arrive (onRequest); the process slot is taken only in step 5
 * (preHandler), so a client sending its body slowly holds none.
 */
export function registerAdmission(app: FastifyInstance, deps: AdmissionDeps): void {
  app.decorateRequest('auth', undefined);
  app.decorateRequest('startedAt', 0);
  app.decorateRequest('exchange', undefined);

  app.addHook('onRequest', async (request, reply) => {
    request.startedAt = Date.now();
    if (deps.inFlight.full) throw atCapacity();
    const exchange = new Exchange(deps.inFlight, request, reply);
    request.exchange = exchange;
    const auth = await deps.authenticator.authenticate(authorizationOf(request));
    request.auth = auth;
    const { controls } = auth;
    exchange.holdKeySlot(await deps.keyLimiter.acquire(auth.keyId, controls));
    if (controls !== undefined && controls.tpm !== null) {
      const { keyLimiter } = deps;
      const { keyId } = auth;
      exchange.tokensSettled = (tokens) => keyLimiter.tokensSettled(keyId, tokens);
    }
    countBodyForKey(request, reply, auth.keyId);
  });

  // Synchronous, so nothing runs between taking the slot and the handler taking over ending it.
  app.addHook('preHandler', (request, _reply, done) => {
    if (request.exchange?.enterProcess()) done();
    else done(atCapacity());
  });
}

function countBodyForKey(request: FastifyRequest, reply: FastifyReply, keyId: string): void {
  try {
    request.pendingBody?.forKey(keyId);
  } catch (err) {
    reply.header('connection', 'close');
    throw err;
  }
}

/**
 * The key as an Authorization header: the header itself, or, when none is sent, `x-api-key: <key>` (how
 * Anthropic's clients send it) as a Bearer key.
 */
function authorizationOf(request: FastifyRequest): string | undefined {
  const { authorization } = request.headers;
  if (authorization !== undefined) return authorization;
  const key = request.headers['x-api-key'];
  return typeof key === 'string' ? `Bearer ${key}` : undefined;
}

/** An admitted request: its slots and who is calling. A route of every front door starts with it. */
export function admitted(request: FastifyRequest): { exchange: Exchange; auth: AuthContext } {
  if (!request.exchange || !request.auth) throw new Error('route reached without admission');
  return { exchange: request.exchange, auth: request.auth };
}

/** The pipeline's context of an admitted request: the same on every front door (its key's controls too). */
export function callContext(
  request: FastifyRequest,
  { exchange, auth }: { exchange: Exchange; auth: AuthContext },
): RequestContext {
  return {
    requestId: newCompletionId(),
    accountId: auth.accountId,
    keyId: auth.keyId,
    keyAllowed: auth.controls?.allowed,
    startedAt: request.startedAt,
    upstreamWait: request.overhead,
    clientGone: () => exchange.clientGone,
    tokensSettled: exchange.tokensSettled,
  };
}
