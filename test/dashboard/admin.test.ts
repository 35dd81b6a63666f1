import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  codeOf,
  createUser,
  DashboardClient,
  type Harness,
  startDashboardHarness,
} from './dashboard-helpers.js';

let h: Harness;
let admin: DashboardClient;
let adminId: string;
beforeAll(async () => {
  h = await startDashboardHarness({ env: { PROV_MISTRAL_ENABLED: 'false' } });
  const a = await createUser(h, { role: 'admin', email: 'admin@example.test' });
  adminId = a.id;
  admin = new DashboardClient(h);
  await admin.login(a.email);
});
afterAll(async () => {
  await h.close();
});

describe('administration', () => {
  it('is refused to user accounts (403 forbidden) and to visitors (401)', async () => {
    const u = await createUser(h);
    const user = new DashboardClient(h);
    await user.login(u.email);
    const visitor = new DashboardClient(h);
    const routes: [method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown][] = [
      ['GET', '/admin/accounts'],
      ['POST', `/admin/accounts/${u.id}/credits`, { amount: '100', note: 'self-service' }],
      ['POST', `/admin/accounts/${adminId}/disable`, {}],
      ['POST', `/admin/accounts/${adminId}/enable`, {}],
      ['GET', '/admin/providers'],
      ['GET', '/admin/invites'],
      ['POST', '/admin/invites', {}],
      ['DELETE', '/admin/invites/inv_x'],
    ];
    for (const [method, url, body] of routes) {
      const asUser = await user.request(method, url, body);
      expect(asUser.status, `${method} ${url}`).toBe(403);
      expect(codeOf(asUser)).toBe('forbidden');
      expect(codeOf(await visitor.request(method, url, body))).toBe('not_authenticated');
    }
    expect(await h.server.store.getAccount(u.id)).toMatchObject({ balanceNano: 0 });
  });

  it('lists accounts with balances, by email, paged and searchable', async () => {
    for (const n of ['alpha', 'bravo', 'charlie']) await createUser(h, { email: `${n}@list.test`, usd: 2 });
    const res = await admin.get('/admin/accounts?search=list.test&limit=2');
    expect(res.status).toBe(200);
    const first = res.body.data as { email: string; balance: number; role: string; status: string }[];
    expect(first.map((a) => a.email)).toEqual(['alpha@list.test', 'bravo@list.test']);
    expect(first[0]).toMatchObject({ balance: 2, role: 'user', status: 'active' });
    expect(res.body.next_cursor).toBe('bravo@list.test');
    const second = await admin.get('/admin/accounts?search=list.test&limit=2&after=bravo@list.test');
    expect((second.body.data as { email: string }[]).map((a) => a.email)).toEqual(['charlie@list.test']);
    expect(second.body.next_cursor).toBeNull();
    expect(res.text).not.toMatch(/password|hash/i);
  });

  it('grants credit as a ledger entry with its note; the user sees the balance and the note', async () => {
    const u = await createUser(h);
    const user = new DashboardClient(h);
    await user.login(u.email);
    const grant = await admin.post(`/admin/accounts/${u.id}/credits`, {
      amount: '12.345678901',
      note: 'invoice 7',
    });
    expect(grant.status).toBe(200);
    expect(grant.body.account).toMatchObject({ id: u.id, balance: 12.345678901 });
    expect((await user.get('/account')).body.balance).toBe(12.345678901);
    const credits = (await user.get('/credits')).body.data as { amount: number; note: string }[];
    expect(credits).toEqual([expect.objectContaining({ amount: 12.345678901, note: 'invoice 7' })]);
    expect((await h.server.store.ledgerCheck()).ok).toBe(true);

    for (const body of [
      { amount: '0', note: 'x' },
      { amount: '-5', note: 'x' },
      { amount: '1.0000000001', note: 'x' },
      { amount: '2000000', note: 'x' },
      { amount: 'ten', note: 'x' },
      { amount: '5' },
      { amount: '5', note: '   ' },
      { amount: '5', note: 'x', account_id: adminId },
    ]) {
      const res = await admin.post(`/admin/accounts/${u.id}/credits`, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(codeOf(res)).toBe('invalid_request');
    }
    expect(codeOf(await admin.post('/admin/accounts/acct_nobody/credits', { amount: '1', note: 'x' }))).toBe(
      'not_found',
    );
    expect((await user.get('/account')).body.balance).toBe(12.345678901);
  });

  it('disabling an account logs it out and refuses its keys at once; enabling restores them', async () => {
    const u = await createUser(h, { usd: 1 });
    const user = new DashboardClient(h);
    await user.login(u.email);
    const key = (await user.post('/keys', { name: 'k' })).body.key as string;
    expect((await h.chat(key)).status).toBe(200);
    const disabled = await admin.post(`/admin/accounts/${u.id}/disable`, {});
    expect(disabled.body.account).toMatchObject({ status: 'disabled' });
    expect((await h.chat(key)).status).toBe(401);
    expect(codeOf(await user.get('/keys'))).toBe('not_authenticated');
    expect((await admin.post(`/admin/accounts/${u.id}/enable`, {})).body.account).toMatchObject({
      status: 'active',
    });
    expect((await h.chat(key)).status).toBe(200);
    expect(codeOf(await admin.post(`/admin/accounts/${adminId}/disable`, {}))).toBe('invalid_request');
  });

  it('shows each provider: state and why, circuit, prices, recent error rate', async () => {
    const u = await createUser(h, { usd: 1 });
    const user = new DashboardClient(h);
    await user.login(u.email);
    const key = (await user.post('/keys', { name: 'k' })).body.key as string;
    h.sim.setFault('llama', { kind: 'status', status: 500, times: 1 });
    expect(
      (await h.chat(key, { provider: 'prov-llama', messages: [{ role: 'user', content: 'a' }] })).status,
    ).toBe(502);
    expect(
      (await h.chat(key, { provider: 'prov-llama', messages: [{ role: 'user', content: 'b' }] })).status,
    ).toBe(200);
    const res = await admin.get('/admin/providers');
    expect(res.status).toBe(200);
    expect(res.body.window_minutes).toBe(60);
    const rows = res.body.data as Record<string, unknown>[];
    expect(rows.map((r) => r.name)).toHaveLength(8);
    expect(rows.find((r) => r.name === 'prov-mistral')).toMatchObject({
      active: false,
      inactive_reason: 'disabled',
    });
    expect(rows.find((r) => r.name === 'prov-llama')).toMatchObject({
      active: true,
      inactive_reason: null,
      circuit: 'closed',
      requests_last_hour: 2,
      errors_last_hour: 1,
      error_rate: 0.5,
      input_price: 0.59,
      output_price: 0.79,
    });
    expect(res.text).not.toContain('upstream-secret');
  });
});
