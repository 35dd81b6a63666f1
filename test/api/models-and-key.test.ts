import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROVIDER_NAMES } from '../../src/providers/types.js';
import { type Harness, hello, startHarness } from '../helpers/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ unconfigured: ['prov-mistral'], env: { KEY_RATE_LIMIT_RPM: '600' } });
});
afterAll(async () => {
  await h.close();
});

async function get(url: string, key: string | null = h.key) {
  const res = await h.server.app.inject({
    method: 'GET',
    url,
    headers: key === null ? {} : { authorization: `Bearer ${key}` },
  });
  return {
    status: res.statusCode,
    body: JSON.parse(res.body) as Record<string, unknown>,
    headers: res.headers,
  };
}

type Model = {
  id: string;
  object: string;
  owned_by: string;
  tollgate: {
    provider: string;
    pricing: { input: number; output: number };
    auto: boolean;
    active: boolean;
    alias_of?: string;
  };
};

describe('GET /api/v1/models', () => {
  it('lists one model per provider in OpenAI list format, with prices, auto and active', async () => {
    const res = await get('/api/v1/models');
    expect(res.status).toBe(200);
    expect(res.body.object).toBe('list');
    const all = res.body.data as Model[];
    const data = all.filter((m) => m.tollgate.alias_of === undefined);
    expect(data.map((m) => m.tollgate.provider)).toEqual([...PROVIDER_NAMES]);
    // Then the names MODEL_ALIASES maps (by default claude-* → prov-claude), served by their provider's model.
    expect(all.slice(data.length)).toEqual([
      expect.objectContaining({
        id: 'claude-*',
        owned_by: 'prov-claude',
        tollgate: expect.objectContaining({ alias_of: h.config.providers['prov-claude'].model }),
      }),
    ]);
    for (const m of data) {
      const p = h.config.providers[m.tollgate.provider as (typeof PROVIDER_NAMES)[number]];
      expect(m).toMatchObject({ id: p.model, object: 'model', owned_by: p.name });
      expect(m.tollgate.pricing).toEqual({ input: p.inputPriceNano / 1e9, output: p.outputPriceNano / 1e9 });
      expect(m.tollgate.auto).toBe(p.inAutoRotation);
      expect(m.tollgate.active).toBe(p.name !== 'prov-mistral');
    }
  });

  it('retrieves one model by model name (with a slash) or provider name; unknown → 404 model_not_found', async () => {
    const gptOss = h.config.providers['prov-gpt-oss-120b'].model;
    expect((await get(`/api/v1/models/${gptOss}`)).body).toMatchObject({
      id: gptOss,
      owned_by: 'prov-gpt-oss-120b',
    });
    expect((await get('/api/v1/models/prov-claude')).body).toMatchObject({ owned_by: 'prov-claude' });
    expect((await get('/api/v1/models/claude-opus-4-1')).body).toMatchObject({
      id: 'claude-opus-4-1',
      owned_by: 'prov-claude',
      tollgate: { alias_of: h.config.providers['prov-claude'].model },
    });
    const missing = await get('/api/v1/models/no-such-model');
    expect(missing.status).toBe(404);
    expect(missing.body.error).toMatchObject({
      code: 'model_not_found',
      message: expect.stringContaining('This Tollgate gateway does not serve the model "no-such-model"'),
    });
  });

  it('needs an API key', async () => {
    const res = await get('/api/v1/models', null);
    expect(res.status).toBe(401);
    expect((res.body.error as { code: string }).code).toBe('missing_api_key');
  });
});

describe('GET /api/v1/key', () => {
  it('reports the key, the balance and the spend today and this month', async () => {
    const account = await h.newAccount('2.5');
    const fresh = await get('/api/v1/key', account.key);
    expect(fresh.status).toBe(200);
    expect(fresh.body).toMatchObject({
      object: 'api_key',
      name: 'test key',
      balance: 2.5,
      held: 0,
      spend: { today: 0, month: 0 },
      // KEY_MAX_CONCURRENT unset: half of MAX_CONCURRENT_REQUESTS (4096).
      limits: { requests_per_minute: 600, concurrent_requests: 2048 },
      last_used_at: expect.any(Number),
    });
    expect(fresh.body.hint).toMatch(/^sk-svc-[0-9a-f]{4}…[0-9a-f]{4}$/);
    expect(JSON.stringify(fresh.body)).not.toContain(account.key);

    const a = await h.chat(hello, { key: account.key });
    const b = await h.chat(hello, { key: account.key });
    const spent = [a, b].reduce(
      (n, r) => n + Math.round((r.body as { meta: { cost: { total: number } } }).meta.cost.total * 1e9),
      0,
    );
    const after = await get('/api/v1/key', account.key);
    expect(Math.round((after.body.spend as { today: number }).today * 1e9)).toBe(spent);
    expect(Math.round((after.body.spend as { month: number }).month * 1e9)).toBe(spent);
    expect(Math.round((after.body.balance as number) * 1e9)).toBe(2_500_000_000 - spent);
  });
});

describe('usage.cost', () => {
  it('carries the amount charged in dollars, the exact decimal of meta.cost input + output', async () => {
    const res = await h.chat(hello);
    const body = res.body as {
      usage: { cost: number };
      meta: { cost: { input: number; output: number; total: number } };
    };
    const nano = (usd: number) => Math.round(usd * 1e9);
    expect(nano(body.usage.cost)).toBe(nano(body.meta.cost.input) + nano(body.meta.cost.output));
    expect(body.usage.cost).toBe((nano(body.meta.cost.input) + nano(body.meta.cost.output)) / 1e9);
    expect(body.usage.cost).toBeGreaterThan(0);
    expect(res.headers['x-request-id']).toBeTruthy();
  });
});
