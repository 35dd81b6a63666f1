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
let user: DashboardClient;
const users: { id: string; email: string }[] = [];

const nano = (usd: number) => Math.round(usd * 1e9);

beforeAll(async () => {
  h = await startDashboardHarness();
  const root = await createUser(h, { role: 'admin', email: 'root@admin-view.test' });
  admin = new DashboardClient(h);
  await admin.login(root.email);
  const providers = ['prov-qwen', 'prov-claude', 'prov-gemini', 'prov-deepseek'];
  for (let u = 0; u < 3; u++) {
    const account = await createUser(h, { usd: 2 });
    users.push(account);
    const c = new DashboardClient(h);
    await c.login(account.email);
    if (u === 0) user = c;
    const key = (await c.post('/keys', { name: `k${u}` })).body.key as string;
    for (let i = 0; i < 3 + u; i++) {
      const provider = providers[(u + i) % providers.length] as string;
      const res = await h.chat(key, { provider, messages: [{ role: 'user', content: `q ${u} ${i}` }] });
      expect(res.status).toBe(200);
    }
    await c.post('/playground/chat', { provider: 'prov-qwen', messages: [{ role: 'user', content: 'hi' }] });
  }
});
afterAll(async () => {
  await h?.close();
});

describe("the admin's view of every account", () => {
  it('refuses non-admins', async () => {
    const id = users[1]?.id as string;
    for (const path of ['/admin/usage', `/admin/accounts/${id}/history`]) {
      const res = await user.get(path);
      expect(res.status).toBe(403);
      expect(codeOf(res)).toBe('forbidden');
    }
    const anonymous = await new DashboardClient(h).get('/admin/usage');
    expect(anonymous.status).toBe(401);
  });

  it("totals equal the sum of every account's usage rows, by account, provider and model", async () => {
    const res = await admin.get('/admin/usage?interval=hour&from=2000-01-01&to=2000-01-01');
    expect(res.status).toBe(200);
    expect((res.body.totals as { requests: number }).requests).toBe(0);

    const today = new Date().toISOString().slice(0, 10);
    const report = (await admin.get(`/admin/usage?from=${today}&to=${today}`)).body as {
      totals: { cost_nano: number; requests: number };
      by_account: { account_id: string; email: string; cost_nano: number; requests: number }[];
      by_provider: { provider: string; cost_nano: number }[];
      by_model: { model: string; cost_nano: number }[];
      series: { cost_nano: number }[];
    };
    let all = 0;
    let count = 0;
    const byProvider = new Map<string, number>();
    for (const u of users) {
      const history = (await admin.get(`/admin/accounts/${u.id}/history?limit=200`)).body as {
        usage: { cost: number; provider: string }[];
        credits: { amount: number }[];
      };
      const rows = await h.server.store.listUsage(u.id, { limit: 100 });
      const sum = rows.reduce((s, r) => s + r.inputCostNano + r.outputCostNano, 0);
      expect(history.usage.reduce((s, r) => s + nano(r.cost), 0)).toBe(sum);
      expect(history.credits.map((c) => c.amount)).toEqual([2]);
      const entry = report.by_account.find((e) => e.account_id === u.id);
      expect(entry?.email).toBe(u.email);
      expect(entry?.cost_nano).toBe(sum);
      expect(entry?.requests).toBe(rows.length);
      all += sum;
      count += rows.length;
      for (const r of rows) {
        byProvider.set(
          String(r.provider),
          (byProvider.get(String(r.provider)) ?? 0) + r.inputCostNano + r.outputCostNano,
        );
      }
    }
    expect(report.totals.cost_nano).toBe(all);
    expect(report.totals.requests).toBe(count);
    expect(report.series.reduce((s, b) => s + b.cost_nano, 0)).toBe(all);
    expect(report.by_provider.length).toBeGreaterThanOrEqual(4);
    for (const p of report.by_provider) expect(p.cost_nano).toBe(byProvider.get(p.provider));
    expect(report.by_model.reduce((s, m) => s + m.cost_nano, 0)).toBe(all);
  });

  it('an unknown account is 404 and a bad range 400', async () => {
    expect((await admin.get('/admin/accounts/acct_nope/history')).status).toBe(404);
    const bad = await admin.get('/admin/usage?from=2026-02-01&to=2026-01-01');
    expect(bad.status).toBe(400);
    expect(codeOf(bad)).toBe('invalid_request');
  });
});
