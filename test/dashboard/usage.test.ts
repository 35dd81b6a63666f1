import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  codeOf,
  createUser,
  DashboardClient,
  type Harness,
  startDashboardHarness,
} from './dashboard-helpers.js';

let h: Harness;
let c: DashboardClient;
let accountId: string;
let laptop: { id: string; key: string };
let server: { id: string; key: string };
const served: { provider: string; cost: number }[] = [];

beforeAll(async () => {
  h = await startDashboardHarness();
  const u = await createUser(h, { usd: 5 });
  accountId = u.id;
  c = new DashboardClient(h);
  await c.login(u.email);
  const make = async (name: string) => {
    const res = await c.post('/keys', { name });
    return { id: res.body.id as string, key: res.body.key as string };
  };
  laptop = await make('laptop');
  server = await make('=HYPERLINK("http://evil.example")');
  for (let i = 0; i < 7; i++) {
    const key = i % 2 === 0 ? laptop.key : server.key;
    const provider = ['prov-qwen', 'prov-claude', 'prov-gemini'][i % 3] as string;
    const res = await h.chat(key, { provider, messages: [{ role: 'user', content: `question ${i}` }] });
    expect(res.status).toBe(200);
    served.push({ provider, cost: (res.body.meta as { cost: { total: number } }).cost.total });
  }
  // A failed request leaves an error row.
  h.sim.setFault('kimi', { kind: 'status', status: 500 });
});
afterAll(async () => {
  await h.close();
});

type Row = {
  request_id: string;
  provider: string;
  key: { id: string; name: string };
  cost: number;
  status: string;
};

describe('usage in the dashboard', () => {
  it('lists requests newest first with key, provider, model, tokens, cost, duration and status', async () => {
    const res = await c.get('/usage');
    expect(res.status).toBe(200);
    const rows = res.body.data as (Row & Record<string, unknown>)[];
    expect(rows).toHaveLength(7);
    expect(res.body.next_cursor).toBeNull();
    const newest = rows[0] as Record<string, unknown>;
    expect(newest).toMatchObject({ provider: 'prov-qwen', status: 'ok', http_status: 200 });
    expect(newest.key).toMatchObject({ id: laptop.id, name: 'laptop' });
    expect(newest.total_tokens).toBe((newest.prompt_tokens as number) + (newest.completion_tokens as number));
    expect(typeof newest.duration_ms).toBe('number');
    expect(typeof newest.model).toBe('string');
    const times = rows.map((r) => Date.parse(String((r as Record<string, unknown>).created_at)));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    const total = rows.reduce((s, r) => s + r.cost, 0);
    expect(total).toBeCloseTo(
      served.reduce((s, x) => s + x.cost, 0),
      12,
    );
  });

  it('pages with an opaque cursor, without gaps or repeats', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await c.get(`/usage?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      seen.push(...(res.body.data as Row[]).map((r) => r.request_id));
      cursor = res.body.next_cursor as string | null;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(new Set(seen).size).toBe(7);
    expect(codeOf(await c.get('/usage?cursor=not-a-cursor!'))).toBe('invalid_request');
  });

  it('filters by key, provider, status and day', async () => {
    const byKey = (await c.get(`/usage?key_id=${server.id}`)).body.data as Row[];
    expect(byKey).toHaveLength(3);
    expect(byKey.every((r) => r.key.id === server.id)).toBe(true);
    const byProvider = (await c.get('/usage?provider=prov-claude')).body.data as Row[];
    expect(byProvider.map((r) => r.provider)).toEqual(['prov-claude', 'prov-claude']);
    expect((await c.get('/usage?status=error')).body.data).toEqual([]);
    const today = new Date().toISOString().slice(0, 10);
    expect((await c.get(`/usage?from=${today}&to=${today}`)).body.data).toHaveLength(7);
    expect((await c.get('/usage?from=2001-01-01&to=2001-01-02')).body.data).toHaveLength(0);
    for (const bad of [
      'provider=prov-nope',
      'status=maybe',
      'from=2024-02-30',
      'limit=0',
      'limit=201',
      'colour=red',
    ]) {
      expect(codeOf(await c.get(`/usage?${bad}`)), bad).toBe('invalid_request');
    }
  });

  it('shows a failed request with its error code and no cost', async () => {
    const res = await h.chat(laptop.key, {
      provider: 'prov-kimi',
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(res.status).toBe(502);
    const rows = (await c.get('/usage?status=error')).body.data as (Row & { error_code: string })[];
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      provider: 'prov-kimi',
      status: 'error',
      error_code: 'provider_error',
      cost: 0,
    });
  });

  it('totals spend and tokens per UTC day by provider', async () => {
    const res = await c.get('/usage/daily?days=7');
    expect(res.status).toBe(200);
    const days = res.body.days as {
      date: string;
      requests: number;
      cost: number;
      by_provider: Record<string, { cost: number; requests: number }>;
    }[];
    expect(days).toHaveLength(7);
    const today = days[6];
    expect(today?.date).toBe(new Date().toISOString().slice(0, 10));
    expect(today?.requests).toBe(8);
    for (const p of ['prov-qwen', 'prov-claude', 'prov-gemini']) {
      const expected = served.filter((s) => s.provider === p).reduce((a, s) => a + s.cost, 0);
      expect(today?.by_provider[p]?.cost).toBeCloseTo(expected, 12);
    }
    expect(days.slice(0, 6).every((d) => d.requests === 0)).toBe(true);
    expect(res.body.providers).toEqual(['prov-claude', 'prov-gemini', 'prov-kimi', 'prov-qwen']);
    const oneKey = await c.get(`/usage/daily?days=1&key_id=${server.id}`);
    expect((oneKey.body.days as { requests: number }[])[0]?.requests).toBe(3);
    expect(codeOf(await c.get('/usage/daily?days=91'))).toBe('invalid_request');
  });

  it('exports CSV with the filters applied, exact dollar amounts, and formula-proof key names', async () => {
    const res = await c.get(`/usage/export.csv?key_id=${server.id}`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(String(res.headers['content-disposition'])).toMatch(
      /^attachment; filename="tollgate-usage-\d{4}-\d{2}-\d{2}\.csv"$/,
    );
    const lines = res.text.trimEnd().split('\r\n');
    expect(lines[0]).toBe(
      'time,request_id,key_id,key_name,provider,model,prompt_tokens,completion_tokens,total_tokens,usage_estimated,cost_usd,duration_ms,status,error_code,http_status,requests,cache_read_tokens,cache_write_tokens',
    );
    expect(lines).toHaveLength(4);
    for (const line of lines.slice(1)) {
      expect(line).toContain(`,"'=HYPERLINK(""http://evil.example"")",`);
      expect(line).toMatch(/,0\.\d+,/);
    }
    const all = await c.get('/usage/export.csv');
    expect(all.text.trimEnd().split('\r\n')).toHaveLength(9);
  });

  it('streams a large export in batches', async () => {
    const store = h.server.store;
    const base = Date.now() - 3_600_000;
    for (let i = 0; i < 2500; i++) {
      await store.recordUsage({
        requestId: `chatcmpl-bulk${String(i).padStart(5, '0')}`,
        accountId,
        keyId: laptop.id,
        provider: 'prov-deepseek',
        model: 'deepseek-chat',
        promptTokens: 1,
        completionTokens: 1,
        usageEstimated: false,
        inputCostNano: 0,
        outputCostNano: 0,
        status: 'error',
        errorCode: 'insufficient_balance',
        httpStatus: 402,
        durationMs: 1,
        clientGone: false,
        createdAt: base + Math.floor(i / 3),
      });
    }
    const res = await c.get('/usage/export.csv?provider=prov-deepseek');
    const ids = res.text
      .trimEnd()
      .split('\r\n')
      .slice(1)
      .map((l) => l.split(',')[1]);
    expect(ids).toHaveLength(2500);
    expect(new Set(ids).size).toBe(2500);
  });
});
