import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUser, DashboardClient, type Harness, startDashboardHarness } from './dashboard-helpers.js';

/** What the dashboard's key pages read: every key's controls at once, and the models each key may use. */
let h: Harness;
beforeAll(async () => {
  h = await startDashboardHarness();
});
afterAll(async () => {
  await h.close();
});

async function signedIn(): Promise<DashboardClient> {
  const u = await createUser(h, { usd: 5 });
  const c = new DashboardClient(h);
  await c.login(u.email);
  return c;
}

describe('key controls and models in the dashboard API', () => {
  it('GET /keys/controls lists every active key with its limit window, as PATCH set it', async () => {
    const c = await signedIn();
    const a = (await c.post('/keys', { name: 'ci' })).body.id as string;
    const b = (await c.post('/keys', { name: 'laptop' })).body.id as string;
    const gone = (await c.post('/keys', { name: 'old' })).body.id as string;
    await c.delete(`/keys/${gone}`);
    const patched = await c.request('PATCH', `/keys/${a}`, {
      limit: '5',
      limit_reset: 'weekly',
      allowed: ['prov-deepseek'],
      rpm: 30,
      tpm: 20000,
      expires_at: '2099-01-01T00:00:00Z',
    });
    expect(patched.status).toBe(200);
    const res = await c.get('/keys/controls');
    expect(res.status).toBe(200);
    const data = res.body.data as { id: string; limit: Record<string, unknown> | null }[];
    expect(data.map((k) => k.id).sort()).toEqual([a, b].sort());
    const ci = data.find((k) => k.id === a);
    expect(ci).toEqual(patched.body);
    expect(ci).toMatchObject({
      limit: { amount: 5, spent: 0, remaining: 5, reset: 'weekly' },
      allowed: ['prov-deepseek'],
      rpm: 30,
      tpm: 20000,
      expires_at: '2099-01-01T00:00:00.000Z',
    });
    // A weekly window ends on a Monday, 00:00 UTC, within the next 7 days.
    const resets = Date.parse(String(ci?.limit?.resets_at));
    expect(new Date(resets).getUTCDay()).toBe(1);
    expect(resets % 86_400_000).toBe(0);
    expect(resets - Date.now()).toBeGreaterThan(0);
    expect(resets - Date.now()).toBeLessThanOrEqual(7 * 86_400_000);
    expect(data.find((k) => k.id === b)?.limit).toBeNull();
  });

  it('GET /models: prices with the cache prices, auto, and which active keys may use each', async () => {
    const c = await signedIn();
    const all = (await c.post('/keys', { name: 'all' })).body.id as string;
    const only = (await c.post('/keys', { name: 'only' })).body.id as string;
    const byModel = (await c.post('/keys', { name: 'by model' })).body.id as string;
    const providers = h.server.registry.all();
    const qwen = providers.find((s) => s.provider.name === 'prov-qwen')?.provider;
    if (!qwen) throw new Error('prov-qwen missing');
    await c.request('PATCH', `/keys/${only}`, { allowed: ['prov-deepseek'] });
    await c.request('PATCH', `/keys/${byModel}`, { allowed: [qwen.model] });
    const res = await c.get('/models');
    expect(res.status).toBe(200);
    const data = res.body.data as Record<string, unknown>[];
    expect(data).toHaveLength(providers.length);
    for (const m of data) {
      const p = providers.find((s) => s.provider.name === m.provider)?.provider;
      expect(m).toMatchObject({
        model: p?.model,
        input_price: (p?.inputPriceNano ?? 0) / 1e9,
        output_price: (p?.outputPriceNano ?? 0) / 1e9,
        cache_read_price: (p?.cacheReadPriceNano ?? 0) / 1e9,
        cache_write_price: (p?.cacheWritePriceNano ?? 0) / 1e9,
        auto: p?.inAutoRotation,
      });
      const expected = [all];
      if (m.provider === 'prov-deepseek') expected.push(only);
      if (m.provider === 'prov-qwen') expected.push(byModel);
      expect((m.key_ids as string[]).sort(), String(m.provider)).toEqual(expected.sort());
    }
    expect((res.body.keys as { id: string }[]).map((k) => k.id).sort()).toEqual([all, only, byModel].sort());
  });
});
