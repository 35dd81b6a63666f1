import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-key.js';
import { sessionIdOf } from '../../src/auth/sessions.js';
import {
  codeOf,
  createUser,
  DashboardClient,
  type Harness,
  PASSWORD,
  type Response,
  startDashboardHarness,
} from './dashboard-helpers.js';

const logLines: string[] = [];
const responses: Response[] = [];
let h: Harness;

/** Records every response it gets, so the tests can search them all for secrets. */
class RecordingClient extends DashboardClient {
  override async request(...args: Parameters<DashboardClient['request']>): Promise<Response> {
    const res = await super.request(...args);
    responses.push(res);
    return res;
  }
}

interface Party {
  c: RecordingClient;
  id: string;
  email: string;
  keyId: string;
  key: string;
  cursor: string;
}

let alice: Party;
let bob: Party;

async function party(name: string): Promise<Party> {
  const u = await createUser(h, { email: `${name}@security.test`, usd: 3 });
  const c = new RecordingClient(h);
  await c.login(u.email);
  const created = await c.post('/keys', { name: `${name}'s key` });
  const key = created.body.key as string;
  for (let i = 0; i < 3; i++) expect((await h.chat(key)).status).toBe(200);
  const page = await c.get('/usage?limit=1');
  return {
    c,
    id: u.id,
    email: u.email,
    keyId: created.body.id as string,
    key,
    cursor: page.body.next_cursor as string,
  };
}

beforeAll(async () => {
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      logLines.push(chunk.toString());
      done();
    },
  });
  h = await startDashboardHarness({ logger: pino({ level: 'trace' }, sink) });
  alice = await party('alice');
  bob = await party('bob');
});
afterAll(async () => {
  await h.close();
});

/** Every dashboard route, with what a user other than the owner might send it. */
function crossAccountRequests(
  victim: Party,
): [method: 'GET' | 'POST' | 'DELETE' | 'PATCH', url: string, body?: unknown][] {
  return [
    ['GET', '/session'],
    ['POST', '/auth/login', { email: victim.email, password: 'not the password at all' }],
    ['POST', '/auth/signup', { email: victim.email, password: PASSWORD }],
    ['POST', '/auth/password', { current_password: PASSWORD, new_password: PASSWORD, account_id: victim.id }],
    ['GET', '/account'],
    ['GET', '/credits'],
    ['GET', '/keys'],
    ['POST', '/keys', { name: 'planted', account_id: victim.id }],
    ['DELETE', `/keys/${victim.keyId}`],
    ['PATCH', `/keys/${victim.keyId}`, { limit: 1 }],
    ['GET', `/keys/${victim.keyId}/controls`],
    ['GET', '/keys/controls'],
    ['GET', '/models'],
    ['GET', `/usage?key_id=${victim.keyId}`],
    ['GET', `/usage?cursor=${victim.cursor}`],
    ['GET', `/usage/daily?key_id=${victim.keyId}`],
    ['GET', `/usage/export.csv?key_id=${victim.keyId}`],
    ['GET', `/usage/report?key_id=${victim.keyId}`],
    ['GET', '/playground/models'],
    ['POST', '/playground/chat', { messages: [{ role: 'user', content: 'whose money is this?' }] }],
    ['GET', '/admin/accounts'],
    ['POST', `/admin/accounts/${victim.id}/credits`, { amount: '1', note: 'x' }],
    ['POST', `/admin/accounts/${victim.id}/disable`, {}],
    ['POST', `/admin/accounts/${victim.id}/enable`, {}],
    ['GET', '/admin/providers'],
    ['GET', '/admin/usage'],
    ['GET', `/admin/accounts/${victim.id}/history`],
    ['GET', '/admin/audit'],
    ['GET', '/admin/invites'],
    ['POST', '/admin/invites', {}],
    ['DELETE', '/admin/invites/inv_000000000000000000000000'],
    ['POST', '/credits/redeem', { code: 'tg-00000000000000000000000000' }],
    ['GET', '/admin/code-batches'],
    ['POST', '/admin/code-batches', { amount: '1', count: 1 }],
    ['GET', '/admin/code-batches/cb_000000000000000000000000'],
    ['POST', '/auth/logout', { account_id: victim.id }],
  ];
}

describe('dashboard security', () => {
  it('the table below covers every dashboard route', () => {
    // printRoutes draws a tree: rebuild each route's full path from its indentation.
    const printed = h.server.app.printRoutes({ commonPrefix: false });
    const routes = new Set<string>();
    const stack: string[] = [];
    for (const line of printed.split('\n')) {
      const at = line.indexOf('── ');
      if (at < 0) continue;
      const depth = (at - 1) / 4;
      const m = /^(\S+)(?: \(([^)]+)\))?/.exec(line.slice(at + 3));
      const path = `${depth > 0 ? (stack[depth - 1] ?? '') : ''}${m?.[1] ?? ''}`;
      stack[depth] = path;
      if (!path.startsWith('/dashboard/api') || !m?.[2]) continue;
      for (const method of m[2].split(', ')) if (method !== 'HEAD') routes.add(`${method} ${path}`);
    }
    const tried = new Set(
      crossAccountRequests(alice).map(([method, url]) => {
        const path = url.split('?')[0] ?? '';
        const pattern = path
          .replace(/\/keys\/(?!controls$)[^/]+$/, '/keys/:id')
          .replace(/\/keys\/[^/]+\/controls$/, '/keys/:id/controls')
          .replace(/\/accounts\/[^/]+\//, '/accounts/:id/')
          .replace(/\/invites\/[^/]+$/, '/invites/:id')
          .replace(/\/code-batches\/[^/]+$/, '/code-batches/:id');
        return `${method} /dashboard/api${pattern}`;
      }),
    );
    expect(routes.size).toBeGreaterThan(15);
    expect([...routes].filter((r) => !tried.has(r))).toEqual([]);
  });

  it("one user can never read, revoke or export another's keys or usage", async () => {
    const before = await h.server.store.listApiKeys(alice.id);
    for (const [method, url, body] of crossAccountRequests(alice)) {
      const res = await bob.c.request(method, url, body);
      const where = `${method} ${url} → ${res.status} ${res.text.slice(0, 200)}`;
      expect(res.status, where).not.toBe(500);
      // Nothing of Alice's comes back: not her key id, her key's name or her email.
      if (!url.startsWith('/auth/login') && !url.startsWith('/auth/signup')) {
        expect(res.text, where).not.toContain(alice.keyId);
        expect(res.text, where).not.toContain("alice's key");
        expect(res.text, where).not.toContain(alice.email);
      }
      if (url.startsWith('/usage?')) expect(res.body.data, where).toEqual([]);
      if (url.startsWith('/usage/daily')) {
        expect(
          (res.body.days as { requests: number }[]).every((d) => d.requests === 0),
          where,
        ).toBe(true);
      }
      if (url.startsWith('/usage/report')) {
        expect(res.body.totals, where).toMatchObject({ requests: 0, cost_nano: 0 });
        expect(res.body.by_key, where).toEqual([]);
      }
      if (url.startsWith('/usage/export.csv'))
        expect(res.text.trimEnd().split('\r\n'), where).toHaveLength(1);
      if (url.startsWith('/keys/') && url !== '/keys/controls') expect(codeOf(res), where).toBe('not_found');
      if (url.startsWith('/admin')) expect(codeOf(res), where).toBe('forbidden');
      // Naming another account in a body is refused outright (see mass assignment below).
      if (body && typeof body === 'object' && 'account_id' in body)
        expect(codeOf(res), where).toBe('invalid_request');
    }
    // Alice's key is untouched and still works; her balance only moved by her own calls.
    expect(await h.server.store.listApiKeys(alice.id)).toEqual(before);
    expect((await h.chat(alice.key)).status).toBe(200);
    expect((await alice.c.get('/usage')).body.data).toHaveLength(4);
  });

  it('mass assignment of balance, role or account_id is refused, and changes nothing', async () => {
    const c = new RecordingClient(h);
    const attempts: [string, Record<string, unknown>][] = [
      ['/auth/signup', { email: 'mallory@security.test', password: PASSWORD, role: 'admin' }],
      ['/auth/signup', { email: 'mallory@security.test', password: PASSWORD, balance: 1000 }],
      ['/auth/signup', { email: 'mallory@security.test', password: PASSWORD, account_id: alice.id }],
      ['/auth/login', { email: bob.email, password: PASSWORD, role: 'admin' }],
    ];
    for (const [url, body] of attempts) {
      const res = await c.post(url, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(codeOf(res)).toBe('invalid_request');
    }
    expect(await h.server.store.findAccountByEmail('mallory@security.test')).toBeUndefined();

    const bobBefore = await h.server.store.getAccount(bob.id);
    for (const [url, body] of [
      ['/keys', { name: 'x', balance: 1000 }],
      ['/keys', { name: 'x', role: 'admin' }],
      ['/keys', { name: 'x', account_id: alice.id }],
      ['/auth/password', { current_password: PASSWORD, new_password: PASSWORD, role: 'admin' }],
      ['/auth/logout', { balance: 5 }],
    ] as const) {
      const res = await bob.c.post(url, body);
      expect(res.status, `${url} ${JSON.stringify(body)}`).toBe(400);
      expect(codeOf(res)).toBe('invalid_request');
    }
    expect(await h.server.store.getAccount(bob.id)).toEqual(bobBefore);
    expect(await h.server.store.listApiKeys(alice.id)).toHaveLength(1);
  });

  it('refuses writes without the CSRF token, with a wrong one, or from another origin', async () => {
    const c = new RecordingClient(h);
    await c.login(bob.email);
    const token = c.csrf ?? '';
    const other = new RecordingClient(h);
    await other.login(alice.email);
    const tries: [string, Record<string, string>][] = [
      ['no token', { 'x-csrf-token': '' }],
      ['wrong token', { 'x-csrf-token': 'A'.repeat(43) }],
      ["another session's token", { 'x-csrf-token': other.csrf ?? '' }],
      [
        'cross-site fetch',
        { 'x-csrf-token': token, 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' },
      ],
      ['same-site sibling', { 'x-csrf-token': token, 'sec-fetch-site': 'same-site' }],
      ['foreign Origin', { 'x-csrf-token': token, origin: 'https://evil.example' }],
      ['null Origin', { 'x-csrf-token': token, origin: 'null' }],
    ];
    const keysBefore = await h.server.store.listApiKeys(bob.id);
    for (const [what, headers] of tries) {
      const created = await c.request('POST', '/keys', { name: what }, headers);
      expect(created.status, what).toBe(403);
      expect(codeOf(created)).toBe('csrf_failed');
      const revoked = await c.request('DELETE', `/keys/${bob.keyId}`, undefined, headers);
      expect(revoked.status, what).toBe(403);
      const logout = await c.request('POST', '/auth/logout', {}, headers);
      expect(logout.status, what).toBe(403);
    }
    expect(await h.server.store.listApiKeys(bob.id)).toEqual(keysBefore);
    // The same calls from the page itself work.
    const same = await c.request(
      'POST',
      '/keys',
      { name: 'from the page' },
      {
        'sec-fetch-site': 'same-origin',
        origin: 'http://localhost:80',
        host: 'localhost:80',
      },
    );
    expect(same.status).toBe(201);
  });

  it('refuses a cross-site login (login CSRF) and form-encoded bodies', async () => {
    const res = await new RecordingClient(h).request(
      'POST',
      '/auth/login',
      { email: bob.email, password: PASSWORD },
      { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
    );
    expect(res.status).toBe(403);
    expect(codeOf(res)).toBe('csrf_failed');
    expect(res.headers['set-cookie']).toBeUndefined();
    const form = await h.server.app.inject({
      method: 'POST',
      url: '/dashboard/api/auth/login',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `email=${encodeURIComponent(bob.email)}&password=${encodeURIComponent(PASSWORD)}`,
    });
    expect(form.statusCode).toBe(415);
    const preflight = await h.server.app.inject({
      method: 'OPTIONS',
      url: '/dashboard/api/keys',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
    expect(responses.every((r) => r.headers['access-control-allow-origin'] === undefined)).toBe(true);
  });

  it('no response or log line contains a password, a hash, a session token or a key after its creation', async () => {
    const dash = h.server.store.dashboard();
    const secrets: string[] = [PASSWORD, 'not the password at all'];
    for (const p of [alice, bob]) {
      secrets.push(p.key, p.key.slice(7), hashApiKey(p.key));
      const login = await dash.findLogin(p.email);
      secrets.push(login?.passwordHash ?? 'missing-hash');
    }
    const tokens = [alice.c.cookie, bob.c.cookie].map((c) => c?.split('=')[1] ?? 'missing');
    secrets.push(...tokens, ...tokens.map(sessionIdOf));
    expect(responses.length).toBeGreaterThan(40);
    expect(logLines.length).toBeGreaterThan(40);
    const creations = responses.filter((r) => r.status === 201 && typeof r.body.key === 'string');
    for (const res of responses) {
      const text = creations.includes(res) ? res.text.replace(String(res.body.key), '') : res.text;
      const headers = JSON.stringify({ ...res.headers, 'set-cookie': undefined });
      for (const s of secrets) {
        expect(text).not.toContain(s);
        expect(headers).not.toContain(s);
      }
      expect(text).not.toMatch(/\$argon2/);
    }
    const logs = logLines.join('');
    for (const s of secrets) expect(logs).not.toContain(s);
    expect(logs).not.toMatch(/\$argon2|sk-svc-[0-9a-f]{32}/);
  });
});
