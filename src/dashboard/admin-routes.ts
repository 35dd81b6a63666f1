import type { FastifyInstance } from 'fastify';
import { GatewayError } from '../errors.js';
import { NANO_PER_USD, parseUsdToNano } from '../money/money.js';
import { inviteCodeHash, newInviteCode } from './auth-routes.js';
import { emailField, fieldsOf, optionalInt, optionalString, queryOf, requiredString } from './body.js';
import { audit, type DashboardDeps, sessionOf } from './deps.js';
import { reportScope, rollUp } from './usage-report.js';
import { accountView, auditView, creditView, inviteView, providerView, usageView } from './views.js';

const ID = /^[A-Za-z0-9_]{1,64}$/;
/** Largest credit one grant may add, so a typo cannot add a fortune. */
const MAX_GRANT_NANO = 1_000_000 * NANO_PER_USD;
const DAY_MS = 86_400_000;
const ERROR_RATE_WINDOW_MS = 3_600_000;

function accountNotFound(): GatewayError {
  return new GatewayError('not_found', 'No such account.');
}

/** Administration (admin accounts only): accounts, credit grants, invites, providers. */
export async function adminRoutes(app: FastifyInstance, deps: DashboardDeps): Promise<void> {
  const { store, dashboardStore, sessions, authenticator, config, now } = deps;
  const admin = { config: { access: 'admin' as const } };

  app.get('/accounts', admin, async (request) => {
    const q = queryOf(request.query, ['search', 'after', 'limit']);
    const limit = q.limit === undefined ? 50 : Number(q.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 200) {
      throw new GatewayError('invalid_request', '"limit" must be a whole number from 1 to 200.', {
        param: 'limit',
      });
    }
    const rows = await dashboardStore.listAccounts({
      limit: limit + 1,
      ...(q.after !== undefined ? { afterEmail: q.after } : {}),
      ...(q.search !== undefined ? { search: q.search.trim().toLowerCase().slice(0, 320) } : {}),
    });
    const page = rows.slice(0, limit);
    return {
      data: page.map(accountView),
      next_cursor: rows.length > limit ? (page[page.length - 1]?.email ?? null) : null,
    };
  });

  app.post<{ Params: { id: string } }>('/accounts/:id/credits', admin, async (request) => {
    const session = sessionOf(request);
    const { id } = request.params;
    const fields = fieldsOf(request.body, ['amount', 'note']);
    const raw = fields.amount;
    const amountNano =
      typeof raw === 'string' || typeof raw === 'number' ? parseUsdToNano(String(raw)) : undefined;
    if (amountNano === undefined || amountNano <= 0 || amountNano > MAX_GRANT_NANO) {
      throw new GatewayError(
        'invalid_request',
        '"amount" must be a positive dollar amount of at most 1000000, with at most 9 decimal places.',
        { param: 'amount' },
      );
    }
    const note = requiredString(fields, 'note', 200).trim();
    if (note === '') throw new GatewayError('invalid_request', '"note" is required.', { param: 'note' });
    if (!ID.test(id) || !(await store.getAccount(id))) throw accountNotFound();
    await store.addCredit({ accountId: id, amountNano, note });
    const account = await store.getAccount(id);
    if (!account) throw accountNotFound();
    request.log.info({ adminId: session.accountId, accountId: id, amountNano }, 'credit granted');
    await audit(deps, request, {
      action: 'credit.grant',
      accountId: id,
      detail: { amount_nano: amountNano, note },
    });
    return { account: accountView(account) };
  });

  for (const [action, status] of [
    ['disable', 'disabled'],
    ['enable', 'active'],
  ] as const) {
    app.post<{ Params: { id: string } }>(`/accounts/:id/${action}`, admin, async (request) => {
      const session = sessionOf(request);
      const { id } = request.params;
      fieldsOf(request.body, []);
      if (!ID.test(id)) throw accountNotFound();
      if (id === session.accountId) {
        throw new GatewayError('invalid_request', 'You cannot disable or enable your own account.');
      }
      const account = await dashboardStore.setAccountStatus(id, status);
      if (!account) throw accountNotFound();
      // The change reaches this process's key cache at once (other processes within KEY_CACHE_TTL_MS).
      authenticator.forgetAccount(id);
      if (status === 'disabled') await sessions.endAll(id);
      request.log.info({ adminId: session.accountId, accountId: id, status }, `account ${status}`);
      await audit(deps, request, { action: `account.${action}`, accountId: id });
      return { account: accountView(account) };
    });
  }

  app.get('/usage', admin, async (request) => {
    const q = queryOf(request.query, [
      'from',
      'to',
      'interval',
      'tz',
      'account_id',
      'key_id',
      'provider',
      'model',
    ]);
    const scope = reportScope(q, now());
    if (q.account_id !== undefined) {
      if (!ID.test(q.account_id)) throw accountNotFound();
      scope.query.accountId = q.account_id;
    }
    const [rows, refusals] = await Promise.all([
      dashboardStore.usageTotals(scope.query),
      dashboardStore.refusalTotals(scope.query),
    ]);
    const report = rollUp(scope, rows, refusals);
    // The accounts by email (one look-up per account in the report).
    const emails = new Map<string, string | null>();
    for (const entry of report.by_account) {
      emails.set(entry.account_id, (await store.getAccount(entry.account_id))?.email ?? null);
    }
    return {
      ...report,
      by_account: report.by_account.map((entry) => ({
        ...entry,
        email: emails.get(entry.account_id) ?? null,
      })),
    };
  });

  app.get<{ Params: { id: string } }>('/accounts/:id/history', admin, async (request) => {
    const { id } = request.params;
    const q = queryOf(request.query, ['limit']);
    const limit = q.limit === undefined ? 50 : Number(q.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 200) {
      throw new GatewayError('invalid_request', '"limit" must be a whole number from 1 to 200.', {
        param: 'limit',
      });
    }
    const account = ID.test(id) ? await store.getAccount(id) : undefined;
    if (!account) throw accountNotFound();
    const [credits, usage] = await Promise.all([
      dashboardStore.recentCredits(id, limit),
      dashboardStore.usagePage(id, {}, { limit }),
    ]);
    return { account: accountView(account), credits: credits.map(creditView), usage: usage.map(usageView) };
  });

  app.get('/audit', admin, async (request) => {
    const q = queryOf(request.query, ['limit', 'before']);
    const limit = q.limit === undefined ? 50 : Number(q.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 200) {
      throw new GatewayError('invalid_request', '"limit" must be a whole number from 1 to 200.', {
        param: 'limit',
      });
    }
    const m = q.before === undefined ? undefined : /^(\d{1,16})\.([A-Za-z0-9_]{1,64})$/.exec(q.before);
    if (q.before !== undefined && !m) {
      throw new GatewayError('invalid_request', '"before" is not a cursor this API returned.', {
        param: 'before',
      });
    }
    const before = m ? { at: Number(m[1]), id: m[2] as string } : undefined;
    const rows = await dashboardStore.listAudit({ limit: limit + 1, before });
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      data: page.map(auditView),
      next_cursor: rows.length > limit && last ? `${last.at}.${last.id}` : null,
    };
  });

  app.get('/providers', admin, async () => {
    const traffic = await dashboardStore.providerTraffic(now() - ERROR_RATE_WINDOW_MS);
    const byName = new Map(traffic.map((t) => [t.provider, t]));
    return {
      window_minutes: ERROR_RATE_WINDOW_MS / 60_000,
      data: deps.providers().map((s) => providerView(s, byName.get(s.provider.name))),
    };
  });

  app.get('/invites', admin, async () => {
    const invites = await dashboardStore.listInvites(100);
    const at = now();
    // Who used each invite, by email (the page says who signed up with it; at most 100 look-ups).
    const emails = new Map<string, string>();
    for (const id of new Set(invites.flatMap((i) => (i.usedBy === null ? [] : [i.usedBy])))) {
      const account = await store.getAccount(id);
      if (account) emails.set(id, account.email);
    }
    return {
      signup: config.signup,
      data: invites.map((i) => inviteView(i, at, i.usedBy === null ? null : (emails.get(i.usedBy) ?? null))),
    };
  });

  app.post('/invites', admin, async (request, reply) => {
    const session = sessionOf(request);
    const fields = fieldsOf(request.body, ['email', 'note', 'expires_in_days']);
    const email = fields.email === undefined || fields.email === '' ? null : emailField(fields);
    const note = optionalString(fields, 'note', 200)?.trim() || null;
    const days = optionalInt(fields, 'expires_in_days', 1, 90) ?? 7;
    const code = newInviteCode();
    const invite = await dashboardStore.createInvite({
      codeHash: inviteCodeHash(code),
      createdBy: session.accountId,
      email,
      note,
      expiresAt: now() + days * DAY_MS,
    });
    request.log.info({ adminId: session.accountId, inviteId: invite.id }, 'invite created');
    await audit(deps, request, {
      action: 'invite.create',
      targetId: invite.id,
      detail: { email, note, expires_in_days: days },
    });
    // Like an API key, the code is shown once: only its hash is stored.
    return reply.code(201).send({ ...inviteView(invite, now()), code });
  });

  app.delete<{ Params: { id: string } }>('/invites/:id', admin, async (request) => {
    const { id } = request.params;
    const outcome = ID.test(id) ? await dashboardStore.revokeInvite(id) : 'not_found';
    if (outcome === 'not_found') throw new GatewayError('not_found', 'No such invite.');
    if (outcome === 'revoked') await audit(deps, request, { action: 'invite.revoke', targetId: id });
    const invite = await dashboardStore.getInvite(id);
    if (!invite) throw new GatewayError('not_found', 'No such invite.');
    return inviteView(invite, now());
  });
}
