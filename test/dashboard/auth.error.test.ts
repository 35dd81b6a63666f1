import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCOUNT_FAILURES, IP_FAILURES } from '../../src/auth/login-throttle.js';
import { inviteCodeHash } from '../../src/dashboard/auth-routes.js';
import {
  codeOf,
  createUser,
  DashboardClient,
  type Harness,
  PASSWORD,
  type Response,
  startDashboardHarness,
} from './dashboard-helpers.js';

let h: Harness;
beforeAll(async () => {
  // TRUST_PROXY lets each test speak from its own client address (X-Forwarded-For).
  h = await startDashboardHarness({ env: { TRUST_PROXY: 'true' } });
});
afterAll(async () => {
  await h.close();
});

let ipCounter = 0;
function newIp(): string {
  ipCounter += 1;
  return `203.0.113.${ipCounter}`;
}

function login(email: string, password: string, ip: string): Promise<Response> {
  return new DashboardClient(h).request(
    'POST',
    '/auth/login',
    { email, password },
    { 'x-forwarded-for': ip },
  );
}

describe('login refusals', () => {
  it('an unknown email and a wrong password get the very same answer', async () => {
    const u = await createUser(h);
    const ip = newIp();
    const wrong = await login(u.email, 'not the password at all', ip);
    const unknown = await login('nobody-here@example.test', 'not the password at all', ip);
    const noPassword = await (async () => {
      const created = await h.server.store.createAccount({
        email: 'api-only@example.test',
        role: 'user',
        passwordHash: null,
      });
      expect(created.ok).toBe(true);
      return login('api-only@example.test', 'anything at all here', ip);
    })();
    for (const res of [wrong, unknown, noPassword]) {
      expect(res.status).toBe(401);
      expect(res.body).toEqual({
        error: {
          message: 'Incorrect email or password.',
          type: 'authentication_error',
          code: 'invalid_credentials',
        },
      });
      expect(res.headers['set-cookie']).toBeUndefined();
    }
  });

  it(`locks an account after ${ACCOUNT_FAILURES} failures, even for the right password, and not other accounts`, async () => {
    const u = await createUser(h);
    const other = await createUser(h);
    for (let i = 0; i < ACCOUNT_FAILURES; i++) {
      expect(codeOf(await login(u.email, `wrong password ${i}`, newIp()))).toBe('invalid_credentials');
    }
    const locked = await login(u.email, PASSWORD, newIp());
    expect(locked.status).toBe(429);
    expect(codeOf(locked)).toBe('too_many_attempts');
    expect(Number(locked.headers['retry-after'])).toBeGreaterThan(0);
    expect((await login(other.email, PASSWORD, newIp())).status).toBe(200);
  });

  it('locks an unknown email the same way, so the lock tells nothing', async () => {
    for (let i = 0; i < ACCOUNT_FAILURES; i++) await login('ghost@example.test', `guess ${i} guess`, newIp());
    expect(codeOf(await login('ghost@example.test', 'guess again guess', newIp()))).toBe('too_many_attempts');
  });

  it(`refuses a client address after ${IP_FAILURES} failures across emails`, async () => {
    const ip = newIp();
    for (let i = 0; i < IP_FAILURES; i++) {
      expect(codeOf(await login(`spray-${i}@example.test`, 'password123456', ip))).toBe(
        'invalid_credentials',
      );
    }
    const u = await createUser(h);
    expect(codeOf(await login(u.email, PASSWORD, ip))).toBe('too_many_attempts');
    expect((await login(u.email, PASSWORD, newIp())).status).toBe(200);
  });

  it('a disabled account is told so only with the right password', async () => {
    const u = await createUser(h);
    const admin = await createUser(h, { role: 'admin' });
    const a = new DashboardClient(h);
    await a.login(admin.email);
    expect((await a.post(`/admin/accounts/${u.id}/disable`, {})).status).toBe(200);
    expect(codeOf(await login(u.email, 'wrong password here', newIp()))).toBe('invalid_credentials');
    const right = await login(u.email, PASSWORD, newIp());
    expect(right.status).toBe(403);
    expect(codeOf(right)).toBe('account_disabled');
    expect(right.headers['set-cookie']).toBeUndefined();
  });

  it('validates the form: email shape, password length, unknown fields', async () => {
    const c = new DashboardClient(h);
    const cases: [unknown, string][] = [
      [{ email: 'not-an-email', password: PASSWORD }, 'email'],
      [{ email: 'x@example.test', password: 'short' }, 'password'],
      [{ email: 'x@example.test', password: PASSWORD, role: 'admin' }, 'role'],
      [{ password: PASSWORD }, 'email'],
    ];
    for (const [body, param] of cases) {
      const res = await c.request('POST', '/auth/signup', body, { 'x-forwarded-for': newIp() });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(codeOf(res)).toBe('invalid_request');
      expect((res.body.error as { param?: string }).param).toBe(param);
    }
    const taken = await createUser(h);
    const dup = await c.request(
      'POST',
      '/auth/signup',
      { email: taken.email, password: PASSWORD },
      { 'x-forwarded-for': newIp() },
    );
    expect(dup.status).toBe(409);
    expect(codeOf(dup)).toBe('email_taken');
  });
});

describe('sign-up modes', () => {
  it('SIGNUP=closed refuses every sign-up', async () => {
    const closed = await startDashboardHarness({ env: { SIGNUP: 'closed' } });
    try {
      const c = new DashboardClient(closed);
      expect((await c.get('/session')).body.signup).toBe('closed');
      const res = await c.post('/auth/signup', { email: 'a@example.test', password: PASSWORD });
      expect(res.status).toBe(403);
      expect(codeOf(res)).toBe('signup_closed');
      expect(await closed.server.store.findAccountByEmail('a@example.test')).toBeUndefined();
    } finally {
      await closed.close();
    }
  });

  it('SIGNUP=invite needs an unused, unexpired, unrevoked code, for its email if it names one', async () => {
    const invite = await startDashboardHarness({ env: { SIGNUP: 'invite' } });
    try {
      const admin = await createUser(invite, { role: 'admin' });
      const a = new DashboardClient(invite);
      await a.login(admin.email);
      const signup = (body: Record<string, unknown>) =>
        new DashboardClient(invite).post('/auth/signup', { password: PASSWORD, ...body });

      expect(codeOf(await signup({ email: 'no-code@example.test' }))).toBe('invalid_invite');
      expect(codeOf(await signup({ email: 'bad-code@example.test', invite_code: 'tg_inv_nope' }))).toBe(
        'invalid_invite',
      );

      const open = await a.post('/admin/invites', { note: 'for the team' });
      expect(open.status).toBe(201);
      const code = open.body.code as string;
      expect(code).toMatch(/^tg_inv_[A-Za-z0-9_-]{22}$/);
      const listed = await a.get('/admin/invites');
      expect(JSON.stringify(listed.body)).not.toContain(code);

      // Two sign-ups race for one code: exactly one account is made.
      const [first, second] = await Promise.all([
        signup({ email: 'first@example.test', invite_code: code }),
        signup({ email: 'second@example.test', invite_code: code }),
      ]);
      expect([first.status, second.status].sort()).toEqual([201, 400]);
      const loser = first.status === 201 ? 'second@example.test' : 'first@example.test';
      expect(await invite.server.store.findAccountByEmail(loser)).toBeUndefined();
      expect(codeOf(await signup({ email: 'third@example.test', invite_code: code }))).toBe('invalid_invite');

      const bound = (await a.post('/admin/invites', { email: 'Bound@Example.test' })).body.code as string;
      expect(codeOf(await signup({ email: 'someone-else@example.test', invite_code: bound }))).toBe(
        'invalid_invite',
      );
      expect((await signup({ email: 'bound@example.test', invite_code: bound })).status).toBe(201);

      const withdrawn = await a.post('/admin/invites', {});
      expect((await a.delete(`/admin/invites/${withdrawn.body.id}`)).body.status).toBe('revoked');
      expect(
        codeOf(await signup({ email: 'late@example.test', invite_code: withdrawn.body.code as string })),
      ).toBe('invalid_invite');

      const expiredCode = 'tg_inv_expired_code_for_this_test';
      await invite.server.store.dashboard().createInvite({
        codeHash: inviteCodeHash(expiredCode),
        createdBy: admin.id,
        email: null,
        note: null,
        expiresAt: Date.now() - 1,
      });
      expect(codeOf(await signup({ email: 'too-late@example.test', invite_code: expiredCode }))).toBe(
        'invalid_invite',
      );

      const statuses = ((await a.get('/admin/invites')).body.data as { status: string }[]).map(
        (i) => i.status,
      );
      expect(statuses.sort()).toEqual(['expired', 'revoked', 'used', 'used']);
    } finally {
      await invite.close();
    }
  });
});
