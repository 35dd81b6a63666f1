import type { FastifyInstance } from 'fastify';
import { createKey, MAX_KEY_NAME_LENGTH, MAX_KEYS_PER_ACCOUNT } from '../auth/keys.js';
import { GatewayError } from '../errors.js';
import { nanoToUsd } from '../money/money.js';
import { fieldsOf } from './body.js';
import { type DashboardDeps, sessionOf } from './deps.js';
import { keyControlRoutes } from './key-control-routes.js';
import { creditView, keyView } from './views.js';

const ID = /^[A-Za-z0-9_]{1,64}$/;

function keyNotFound(): GatewayError {
  return new GatewayError('not_found', 'No such API key.');
}

/** The signed-in account: its balance and spend, credits, and its API keys. */
export async function keyRoutes(app: FastifyInstance, deps: DashboardDeps): Promise<void> {
  const { store, dashboardStore, billing, authenticator } = deps;
  await keyControlRoutes(app, deps);

  app.get('/account', async (request) => {
    const session = sessionOf(request);
    const summary = await billing.summary(session.accountId);
    if (!summary) throw new GatewayError('not_authenticated', 'Log in to continue.');
    const keys = await store.listApiKeys(session.accountId);
    return {
      account: {
        id: session.account.id,
        email: session.account.email,
        role: session.account.role,
        created_at: new Date(session.account.createdAt).toISOString(),
      },
      balance: nanoToUsd(summary.balanceNano),
      held: nanoToUsd(summary.openHoldsNano),
      spend_today: nanoToUsd(summary.todayNano),
      spend_month: nanoToUsd(summary.monthNano),
      active_keys: keys.filter((k) => k.revokedAt === null).length,
      key_limit: MAX_KEYS_PER_ACCOUNT,
    };
  });

  app.get('/credits', async (request) => {
    const session = sessionOf(request);
    const credits = await dashboardStore.recentCredits(session.accountId, 20);
    return { data: credits.map(creditView) };
  });

  app.get('/keys', async (request) => {
    const session = sessionOf(request);
    const keys = await dashboardStore.listKeysWithSpend(session.accountId);
    return {
      data: keys.map(keyView),
      active: keys.filter((k) => k.revokedAt === null).length,
      limit: MAX_KEYS_PER_ACCOUNT,
    };
  });

  app.post('/keys', async (request, reply) => {
    const session = sessionOf(request);
    const fields = fieldsOf(request.body, ['name']);
    const name = typeof fields.name === 'string' ? fields.name : '';
    const result = await createKey(store, session.accountId, name);
    if (!result.ok) {
      if (result.reason === 'limit_reached') throw new GatewayError('key_limit_reached', result.message);
      throw new GatewayError(
        'invalid_request',
        `Give the key a descriptive name (1 to ${MAX_KEY_NAME_LENGTH} characters), e.g. "laptop" or "billing service".`,
        { param: 'name' },
      );
    }
    request.log.info({ accountId: session.accountId, keyId: result.key.id }, 'API key created');
    // The one response that carries the key in plaintext: never stored, never shown again.
    return reply.code(201).send({ ...keyView(result.key), key: result.secret });
  });

  app.delete<{ Params: { id: string } }>('/keys/:id', async (request) => {
    const session = sessionOf(request);
    const { id } = request.params;
    if (!ID.test(id)) throw keyNotFound();
    const outcome = await store.revokeApiKey(session.accountId, id);
    if (outcome === 'not_found') throw keyNotFound();
    // Revocation reaches this process's key cache at once; other processes within KEY_CACHE_TTL_MS.
    const hash = await dashboardStore.keyHash(session.accountId, id);
    if (hash) authenticator.forget(hash);
    if (outcome === 'revoked')
      request.log.info({ accountId: session.accountId, keyId: id }, 'API key revoked');
    const key = (await dashboardStore.listKeysWithSpend(session.accountId)).find((k) => k.id === id);
    if (!key) throw keyNotFound();
    return keyView(key);
  });
}
