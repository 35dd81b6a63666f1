import { createHash, randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hashPassword, passwordProblem, verifyNothing, verifyPassword } from '../auth/passwords.js';
import type { StartedSession } from '../auth/sessions.js';
import { GatewayError } from '../errors.js';
import { emailField, fieldsOf, optionalBoolean, optionalString, requiredString } from './body.js';
import { type DashboardDeps, sessionOf } from './deps.js';
import { apiBaseUrl, clearSessionCookie, clientIp, setSessionCookie } from './request-info.js';
import { accountView } from './views.js';

/** Invite codes: `tg_inv_` + 128 random bits; only their SHA-256 is stored. */
export function newInviteCode(): string {
  return `tg_inv_${randomBytes(16).toString('base64url')}`;
}

export function inviteCodeHash(code: string): string {
  return createHash('sha256').update(code.trim()).digest('hex');
}

function tooManyAttempts(retryAfterMs: number): GatewayError {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new GatewayError(
    'too_many_attempts',
    `Too many attempts. Try again in ${Math.ceil(seconds / 60)} minute${seconds > 60 ? 's' : ''}.`,
    { retryAfterSeconds: seconds },
  );
}

function invalidInvite(): GatewayError {
  return new GatewayError(
    'invalid_invite',
    'This invite code is not valid (used, expired or for another email).',
    { param: 'invite_code' },
  );
}

function newPassword(fields: Record<string, unknown>, name: string): string {
  const password = requiredString(fields, name, 1024);
  const problem = passwordProblem(password);
  if (problem) throw new GatewayError('invalid_request', `The password ${problem}.`, { param: name });
  return password;
}

/** Sign-up, login, logout, password change, and the session probe the single-page app starts with. */
export async function authRoutes(app: FastifyInstance, deps: DashboardDeps): Promise<void> {
  const { config, sessions, throttle, dashboardStore } = deps;

  async function startSession(
    request: FastifyRequest,
    reply: FastifyReply,
    accountId: string,
  ): Promise<StartedSession> {
    // Rotation: whatever session the browser had before is ended; the login gets a fresh token.
    if (request.dashboardToken) await sessions.end(request.dashboardToken);
    const started = await sessions.start(accountId);
    setSessionCookie(request, reply, config, started.token, config.sessionMaxAgeMs);
    return started;
  }

  app.get('/session', { config: { access: 'public' } }, async (request) => {
    const session = request.dashboardSession;
    const common = { signup: config.signup, api_base_url: apiBaseUrl(request, config) };
    if (!session) return { authenticated: false, ...common };
    return {
      authenticated: true,
      ...common,
      account: accountView(session.account),
      csrf_token: session.csrfToken,
      expires_at: new Date(session.expiresAt).toISOString(),
    };
  });

  app.post('/auth/login', { config: { access: 'public' } }, async (request, reply) => {
    const fields = fieldsOf(request.body, ['email', 'password']);
    const email = emailField(fields);
    const password = requiredString(fields, 'password', 1024);
    const ip = clientIp(request, config);
    // The throttle counts the attempt before the password is verified: see `LoginThrottle`.
    const verdict = await throttle.attemptLogin(email, ip, async () => {
      const login = await dashboardStore.findLogin(email);
      const ok =
        login && login.passwordHash !== null
          ? await verifyPassword(login.passwordHash, password)
          : await verifyNothing(password);
      return login && ok ? login : false;
    });
    if (verdict.outcome === 'throttled') throw tooManyAttempts(verdict.retryAfterMs);
    if (verdict.outcome === 'wrong') {
      throw new GatewayError('invalid_credentials', 'Incorrect email or password.');
    }
    const login = verdict.value;
    if (login.account.status !== 'active') {
      throw new GatewayError('account_disabled', 'This account is disabled. Contact the operator.');
    }
    const started = await startSession(request, reply, login.account.id);
    request.log.info({ accountId: login.account.id }, 'dashboard login');
    return { account: accountView(login.account), csrf_token: started.csrfToken };
  });

  app.post('/auth/signup', { config: { access: 'public' } }, async (request, reply) => {
    if (config.signup === 'closed') {
      throw new GatewayError('signup_closed', 'Sign-up is closed. Ask the operator for an account.');
    }
    const allowed = await throttle.signupAttempt(clientIp(request, config));
    if (!allowed.ok) throw tooManyAttempts(allowed.retryAfterMs);
    const fields = fieldsOf(request.body, ['email', 'password', 'invite_code']);
    const email = emailField(fields);
    const password = newPassword(fields, 'password');
    const code = optionalString(fields, 'invite_code', 200);
    let codeHash: string | null = null;
    if (config.signup === 'invite') {
      if (code === undefined) {
        throw new GatewayError('invalid_invite', 'An invite code is required to sign up.', {
          param: 'invite_code',
        });
      }
      codeHash = inviteCodeHash(code);
      // The invite is checked before the email: with a bogus or spent code, `email_taken` would tell
      // anyone which emails have accounts. Only a usable invite's holder learns it.
      if (!(await dashboardStore.inviteUsable(codeHash, email))) throw invalidInvite();
    }
    const result = await dashboardStore.signUp({
      email,
      passwordHash: await hashPassword(password),
      inviteCodeHash: codeHash,
    });
    if (!result.ok) {
      if (result.reason === 'email_taken') {
        throw new GatewayError('email_taken', 'An account with this email already exists. Log in instead.', {
          param: 'email',
        });
      }
      throw invalidInvite();
    }
    const started = await startSession(request, reply, result.account.id);
    request.log.info({ accountId: result.account.id }, 'dashboard sign-up');
    return reply.code(201).send({ account: accountView(result.account), csrf_token: started.csrfToken });
  });

  app.post('/auth/logout', async (request, reply) => {
    const session = sessionOf(request);
    const everywhere = optionalBoolean(fieldsOf(request.body, ['everywhere']), 'everywhere') === true;
    if (everywhere) await sessions.endAll(session.accountId);
    else if (request.dashboardToken) await sessions.end(request.dashboardToken);
    clearSessionCookie(request, reply, config);
    return reply.code(204).send();
  });

  app.post('/auth/password', async (request, reply) => {
    const session = sessionOf(request);
    const fields = fieldsOf(request.body, ['current_password', 'new_password']);
    const current = requiredString(fields, 'current_password', 1024);
    const next = newPassword(fields, 'new_password');
    const ip = clientIp(request, config);
    const email = session.account.email;
    // Counted as a login attempt of the account's email, before the verification (`LoginThrottle`).
    const verdict = await throttle.attemptLogin(email, ip, async () => {
      const stored = await dashboardStore.passwordHashOf(session.accountId);
      return stored ? verifyPassword(stored, current) : verifyNothing(current);
    });
    if (verdict.outcome === 'throttled') throw tooManyAttempts(verdict.retryAfterMs);
    if (verdict.outcome === 'wrong') {
      throw new GatewayError('invalid_credentials', 'The current password is not correct.', {
        param: 'current_password',
      });
    }
    const started = await sessions.changePassword(session.accountId, await hashPassword(next));
    setSessionCookie(request, reply, config, started.token, config.sessionMaxAgeMs);
    request.log.info({ accountId: session.accountId }, 'dashboard password changed; other sessions ended');
    return { csrf_token: started.csrfToken };
  });
}
