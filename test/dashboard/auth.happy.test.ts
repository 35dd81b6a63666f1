import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  codeOf,
  createUser,
  DashboardClient,
  type Harness,
  PASSWORD,
  startDashboardHarness,
} from './dashboard-helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startDashboardHarness();
});
afterAll(async () => {
  await h.close();
});

function cookieHeader(res: { headers: Record<string, unknown> }): string {
  const c = res.headers['set-cookie'];
  return String(Array.isArray(c) ? c[0] : c);
}

describe('dashboard sessions', () => {
  it('GET /session without a cookie says who may sign up and where the API is', async () => {
    const c = new DashboardClient(h);
    const res = await c.get('/session');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ authenticated: false, signup: 'open' });
    expect(res.body.api_base_url).toMatch(/\/api\/v1$/);
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('sign-up creates a user account with no balance and logs it in', async () => {
    const c = new DashboardClient(h);
    const res = await c.post('/auth/signup', { email: ' New.User@Example.test ', password: PASSWORD });
    expect(res.status).toBe(201);
    expect(res.body.account).toMatchObject({ email: 'new.user@example.test', role: 'user', balance: 0 });
    expect(c.cookie).toMatch(/^tollgate_session=[A-Za-z0-9_-]{43}$/);
    const session = await c.get('/session');
    expect(session.body).toMatchObject({ authenticated: true, account: { email: 'new.user@example.test' } });
    expect(session.body.csrf_token).toBe(res.body.csrf_token);
  });

  it('the session cookie is HttpOnly, SameSite=Strict, not Secure over plain HTTP', async () => {
    const u = await createUser(h);
    const c = new DashboardClient(h);
    const res = await c.login(u.email);
    const cookie = cookieHeader(res);
    expect(cookie).toMatch(/^tollgate_session=/);
    expect(cookie).toContain('HttpOnly');
    expect(cookie).toContain('SameSite=Strict');
    expect(cookie).toContain('Path=/');
    expect(cookie).not.toContain('Secure');
    expect(cookie).toMatch(/Max-Age=86400/);
  });

  it('a login rotates the session: the cookie held before it stops working', async () => {
    const u = await createUser(h);
    const c = new DashboardClient(h);
    await c.login(u.email);
    const before = c.cookie;
    await c.login(u.email);
    expect(c.cookie).not.toBe(before);
    const stale = new DashboardClient(h);
    stale.cookie = before;
    expect((await stale.get('/session')).body.authenticated).toBe(false);
    expect((await c.get('/session')).body.authenticated).toBe(true);
  });

  it('logout ends this session only; "everywhere" ends every session of the account', async () => {
    const u = await createUser(h);
    const a = new DashboardClient(h);
    const b = new DashboardClient(h);
    const third = new DashboardClient(h);
    await a.login(u.email);
    await b.login(u.email);
    await third.login(u.email);
    const cookieA = a.cookie;
    const out = await a.post('/auth/logout', {});
    expect(out.status).toBe(204);
    expect(a.cookie).toBeUndefined();
    const replay = new DashboardClient(h);
    replay.cookie = cookieA;
    expect(codeOf(await replay.get('/keys'))).toBe('not_authenticated');
    expect((await b.get('/keys')).status).toBe(200);

    expect((await b.post('/auth/logout', { everywhere: true })).status).toBe(204);
    expect(codeOf(await third.get('/keys'))).toBe('not_authenticated');
  });

  it('a password change ends every session and gives this browser a new one', async () => {
    const u = await createUser(h);
    const a = new DashboardClient(h);
    const other = new DashboardClient(h);
    await a.login(u.email);
    await other.login(u.email);
    const oldCookie = a.cookie;
    const res = await a.post('/auth/password', {
      current_password: PASSWORD,
      new_password: 'a brand new passphrase',
    });
    expect(res.status).toBe(200);
    expect(a.cookie).not.toBe(oldCookie);
    expect((await a.get('/keys')).status).toBe(200);
    expect(codeOf(await other.get('/keys'))).toBe('not_authenticated');
    const replay = new DashboardClient(h);
    replay.cookie = oldCookie;
    expect(codeOf(await replay.get('/keys'))).toBe('not_authenticated');
    // The old password no longer works; the new one does.
    expect(
      codeOf(await new DashboardClient(h).post('/auth/login', { email: u.email, password: PASSWORD })),
    ).toBe('invalid_credentials');
    await new DashboardClient(h).login(u.email, 'a brand new passphrase');
  });

  it('the session table holds only a hash of the token', async () => {
    const u = await createUser(h);
    const c = new DashboardClient(h);
    await c.login(u.email);
    const token = c.cookie?.split('=')[1] ?? '';
    expect(token.length).toBeGreaterThan(40);
    const { sessionIdOf } = await import('../../src/auth/sessions.js');
    const store = h.server.store.dashboard();
    expect(await store.findSession(token)).toBeUndefined();
    expect((await store.findSession(sessionIdOf(token)))?.accountId).toBe(u.id);
  });
});

describe('dashboard sessions behind a TLS-terminating proxy', () => {
  let proxied: Harness;
  beforeAll(async () => {
    proxied = await startDashboardHarness({ env: { TRUST_PROXY: 'true' } });
  });
  afterAll(async () => {
    await proxied.close();
  });

  it('uses a __Host- cookie with Secure when the trusted proxy says https', async () => {
    const u = await createUser(proxied);
    const res = await proxied.server.app.inject({
      method: 'POST',
      url: '/dashboard/api/auth/login',
      headers: { 'content-type': 'application/json', 'x-forwarded-proto': 'https', host: 'llm.example.com' },
      payload: JSON.stringify({ email: u.email, password: PASSWORD }),
    });
    expect(res.statusCode).toBe(200);
    const cookie = cookieHeader(res);
    expect(cookie).toMatch(/^__Host-tollgate_session=/);
    expect(cookie).toContain('Secure');
    expect(cookie).toContain('Path=/');
    expect(cookie).not.toMatch(/Domain=/i);
    const token = cookie.split(';')[0] ?? '';
    const session = await proxied.server.app.inject({
      method: 'GET',
      url: '/dashboard/api/session',
      headers: { cookie: token, 'x-forwarded-proto': 'https', host: 'llm.example.com' },
    });
    expect(JSON.parse(session.body)).toMatchObject({
      authenticated: true,
      api_base_url: 'https://llm.example.com/api/v1',
    });
  });

  it('does not trust X-Forwarded-Proto unless TRUST_PROXY is set', async () => {
    const u = await createUser(h);
    const res = await h.server.app.inject({
      method: 'POST',
      url: '/dashboard/api/auth/login',
      headers: { 'content-type': 'application/json', 'x-forwarded-proto': 'https' },
      payload: JSON.stringify({ email: u.email, password: PASSWORD }),
    });
    expect(cookieHeader(res)).toMatch(/^tollgate_session=/);
    expect(cookieHeader(res)).not.toContain('Secure');
  });
});
