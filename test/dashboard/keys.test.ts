import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-key.js';
import {
  codeOf,
  createUser,
  DashboardClient,
  type Harness,
  startDashboardHarness,
} from './dashboard-helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startDashboardHarness();
});
afterAll(async () => {
  await h.close();
});

async function signedIn(usd = 5): Promise<{ c: DashboardClient; id: string }> {
  const u = await createUser(h, { usd });
  const c = new DashboardClient(h);
  await c.login(u.email);
  return { c, id: u.id };
}

describe('API keys in the dashboard', () => {
  it('creates a named key, shows it once, and lists only its hint afterwards', async () => {
    const { c, id } = await signedIn();
    const res = await c.post('/keys', { name: '  billing service  ' });
    expect(res.status).toBe(201);
    expect(res.headers['cache-control']).toBe('no-store');
    const key = res.body.key as string;
    expect(key).toMatch(/^sk-svc-[0-9a-f]{32}$/);
    expect(res.body).toMatchObject({
      name: 'billing service',
      status: 'active',
      last_used_at: null,
      spend: 0,
    });
    expect(res.body.hint).toBe(`sk-svc-${key.slice(7, 11)}…${key.slice(-4)}`);

    const list = await c.get('/keys');
    expect(list.body).toMatchObject({ active: 1, limit: 10 });
    expect(list.text).not.toContain(key);
    expect(list.text).not.toContain(hashApiKey(key));
    expect(Object.keys((list.body.data as object[])[0] ?? {}).sort()).toEqual(
      [
        'created_at',
        'hint',
        'id',
        'last_used_at',
        'name',
        'requests',
        'revoked_at',
        'spend',
        'status',
      ].sort(),
    );
    expect((await h.server.store.listApiKeys(id))[0]?.name).toBe('billing service');
  });

  it('requires a descriptive name', async () => {
    const { c } = await signedIn();
    for (const body of [{}, { name: '' }, { name: '   ' }, { name: 'x'.repeat(101) }, { name: 42 }]) {
      const res = await c.post('/keys', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(codeOf(res)).toBe('invalid_request');
      expect((res.body.error as { param?: string }).param).toBe('name');
    }
    expect((await c.get('/keys')).body.active).toBe(0);
  });

  it('the key works at once; its spend and last use show in the list', async () => {
    const { c } = await signedIn();
    const key = (await c.post('/keys', { name: 'laptop' })).body.key as string;
    const call = await h.chat(key);
    expect(call.status).toBe(200);
    const listed = ((await c.get('/keys')).body.data as { spend: number; last_used_at: string | null }[])[0];
    const cost = (call.body.meta as { cost: { total: number } }).cost.total;
    expect(listed?.spend).toBeCloseTo(cost, 12);
    expect(listed?.last_used_at).not.toBeNull();
  });

  it('revoking answers with the revoked key, and the API refuses the key right away', async () => {
    const { c } = await signedIn();
    const created = await c.post('/keys', { name: 'to revoke' });
    const key = created.body.key as string;
    expect((await h.chat(key)).status).toBe(200); // now cached as valid in this process
    const revoked = await c.delete(`/keys/${created.body.id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ id: created.body.id, status: 'revoked' });
    expect(revoked.text).not.toContain(key);
    const after = await h.chat(key);
    expect(after.status).toBe(401);
    expect(after.body).toEqual({
      error: { message: 'Invalid API key', type: 'authentication_error', code: 'invalid_api_key' },
    });
    // Revoking again is harmless; an unknown id is a 404.
    expect((await c.delete(`/keys/${created.body.id}`)).status).toBe(200);
    expect(codeOf(await c.delete('/keys/key_doesnotexist'))).toBe('not_found');
  });

  it('refuses the 11th active key with a clear message; revoked keys do not count', async () => {
    const { c } = await signedIn();
    const ids: string[] = [];
    for (let i = 1; i <= 10; i++) {
      const res = await c.post('/keys', { name: `key ${i}` });
      expect(res.status).toBe(201);
      ids.push(res.body.id as string);
    }
    const eleventh = await c.post('/keys', { name: 'key 11' });
    expect(eleventh.status).toBe(409);
    expect(eleventh.body).toEqual({
      error: {
        message: 'An account can have at most 10 API keys; revoke one before creating another.',
        type: 'invalid_request_error',
        code: 'key_limit_reached',
      },
    });
    await c.delete(`/keys/${ids[0]}`);
    expect((await c.post('/keys', { name: 'key 11' })).status).toBe(201);
    expect((await c.get('/keys')).body).toMatchObject({ active: 10 });
  });

  it('keeps the limit under concurrent creates: of 25 at once, exactly 10 succeed', async () => {
    const { c, id } = await signedIn();
    const results = await Promise.all(
      Array.from({ length: 25 }, (_, i) => c.post('/keys', { name: `parallel ${i}` })),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(10);
    expect(statuses.filter((s) => s === 409)).toHaveLength(15);
    for (const r of results.filter((x) => x.status === 409)) expect(codeOf(r)).toBe('key_limit_reached');
    const active = (await h.server.store.listApiKeys(id)).filter((k) => k.revokedAt === null);
    expect(active).toHaveLength(10);
  });
});
