import type { FastifyInstance } from 'fastify';
import { sameSecret } from '../auth/sessions.js';
import { GatewayError } from '../errors.js';
import { adminRoutes } from './admin-routes.js';
import { authRoutes } from './auth-routes.js';
import { codeRoutes } from './code-routes.js';
import { type DashboardDeps, sessionOf } from './deps.js';
import { keyRoutes } from './key-routes.js';
import { assertSameOrigin, clearSessionCookie, sessionTokenOf } from './request-info.js';
import { usageRoutes } from './usage-routes.js';

export type { DashboardDeps } from './deps.js';

const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const PURGE_INTERVAL_MS = 10 * 60_000;

/**
 * The dashboard's JSON API (mounted at `/dashboard/api`): session-cookie authentication, CSRF defence on
 * every state-changing call (same-origin check plus the session's token in `X-CSRF-Token`), and the
 * admin gate. Handlers are thin; SQL lives in `DashboardStore`.
 */
export async function dashboardRoutes(app: FastifyInstance, deps: DashboardDeps): Promise<void> {
  app.decorateRequest('dashboardSession', undefined);
  app.decorateRequest('dashboardToken', undefined);

  app.addHook('onRequest', async (request, reply) => {
    // Answers are per account and may carry a key shown once: never cached, never sniffed.
    reply.header('cache-control', 'no-store');
    reply.header('x-content-type-options', 'nosniff');
    const unsafe = UNSAFE.has(request.method);
    if (unsafe) assertSameOrigin(request, deps.config);

    const token = sessionTokenOf(request, deps.config);
    if (token) {
      request.dashboardToken = token;
      request.dashboardSession = await deps.sessions.resolve(token);
    }
    const access = request.routeOptions.config.access ?? 'user';
    if (access === 'public') return;

    const session = request.dashboardSession;
    if (!session) {
      if (token) clearSessionCookie(request, reply, deps.config);
      throw new GatewayError('not_authenticated', 'Log in to continue: the session is missing or has ended.');
    }
    if (unsafe) {
      const sent = request.headers['x-csrf-token'];
      if (typeof sent !== 'string' || !sameSecret(sent, session.csrfToken)) {
        throw new GatewayError('csrf_failed', 'Missing or wrong X-CSRF-Token header; reload the page.');
      }
    }
    if (access === 'admin' && session.account.role !== 'admin') {
      throw new GatewayError('forbidden', 'Only administrators can do this.');
    }
  });

  const purge = setInterval(() => {
    deps.sessions.purge().catch((err: unknown) => app.log.error({ err }, 'session purge failed'));
  }, PURGE_INTERVAL_MS);
  purge.unref();
  app.addHook('onClose', async () => clearInterval(purge));

  // The options this plugin got carry its own prefix: the route groups get the dependencies only.
  const { prefix: _prefix, ...inner } = deps as DashboardDeps & { prefix?: string };
  await app.register(authRoutes, inner);
  await app.register(keyRoutes, inner);
  await app.register(usageRoutes, inner);
  await app.register(adminRoutes, { ...inner, prefix: '/admin' });
  await app.register(codeRoutes, inner);
  if (deps.playground) {
    await app.register(deps.playground, { accountOf: (request) => sessionOf(request).accountId });
  }
}
