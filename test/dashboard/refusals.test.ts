import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bulkUsage } from '../store/bulk-usage.js';
import { createUser, DashboardClient, type Harness, startDashboardHarness } from './dashboard-helpers.js';

/**
 * Requests refused before any hold (402) are counted per key, error code and minute instead of a usage row
 * each; the dashboard shows those counts wherever it showed the rows. And every report has a time bound.
 */
let h: Harness;
let c: DashboardClient;
let accountId: string;
let key: { id: string; key: string };
const REFUSED = 25;

beforeAll(async () => {
  h = await startDashboardHarness();
  const u = await createUser(h);
  accountId = u.id;
  c = new DashboardClient(h);
  await c.login(u.email);
  const res = await c.post('/keys', { name: 'empty wallet' });
  key = { id: res.body.id as string, key: res.body.key as string };
  for (let i = 0; i < REFUSED; i++) expect((await h.chat(key.key)).status).toBe(402);
  await h.server.store.addCredit({ accountId, amountNano: 1_000_000_000, note: 'now paid' });
  for (let i = 0; i < 2; i++) expect((await h.chat(key.key)).status).toBe(200);
});
afterAll(async () => {
  await h.close();
});

type Row = {
  request_id: string;
  status: string;
  error_code: string | null;
  http_status: number;
  requests: number;
  cost: number;
  key: { id: string; name: string };
};

describe('refused requests in the dashboard', () => {
  it('the usage list shows them as counts, with their key, code and status; every row says how many requests it is', async () => {
    const rows = (await c.get('/usage')).body.data as Row[];
    expect(rows.reduce((n, r) => n + r.requests, 0)).toBe(REFUSED + 2);
    const counts = rows.filter((r) => r.status === 'error');
    expect(counts.reduce((n, r) => n + r.requests, 0)).toBe(REFUSED);
    for (const r of counts) {
      expect(r).toMatchObject({
        error_code: 'insufficient_balance',
        http_status: 402,
        cost: 0,
        key: { id: key.id, name: 'empty wallet' },
      });
      expect(r.request_id).toMatch(/^refused-\d+-key_[0-9a-f]+-insufficient_balance$/);
    }
    expect(rows.filter((r) => r.status === 'ok').map((r) => r.requests)).toEqual([1, 1]);
    expect(((await c.get('/usage?status=error')).body.data as Row[]).map((r) => r.requests)).toEqual(
      counts.map((r) => r.requests),
    );
    expect((await c.get('/usage?status=ok')).body.data).toHaveLength(2);
    expect(((await c.get(`/usage?key_id=${key.id}`)).body.data as Row[]).length).toBe(rows.length);
  });

  it('the chart and the keys count them among the requests; the chart says how many were refused', async () => {
    const day = ((await c.get('/usage/daily?days=1')).body.days as Record<string, unknown>[])[0];
    expect(day).toMatchObject({ requests: REFUSED + 2, refused: REFUSED });
    const byProvider = Object.values(day?.by_provider as Record<string, { requests: number }>);
    expect(byProvider.reduce((n, p) => n + p.requests, 0)).toBe(2);
    const keys = (await c.get('/keys')).body.data as { id: string; requests: number }[];
    expect(keys.find((k) => k.id === key.id)?.requests).toBe(REFUSED + 2);
  });

  it('the CSV export has them, with how many requests each line is', async () => {
    const lines = (await c.get('/usage/export.csv')).text.trimEnd().split('\r\n');
    // `requests` follows http_status; the cached prompt parts come after it (0 for these calls).
    expect(lines[0]?.endsWith(',http_status,requests,cache_read_tokens,cache_write_tokens')).toBe(true);
    const refused = lines.filter((l) => l.includes(',insufficient_balance,402,'));
    expect(refused.reduce((n, l) => n + Number(l.split(',').at(-3)), 0)).toBe(REFUSED);
    expect(lines.filter((l) => l.endsWith(',200,1,0,0'))).toHaveLength(2);
  });
});

describe('a report past DASHBOARD_REPORT_TIMEOUT_MS', () => {
  it(
    'answers 503 service_unavailable in the error shape, saying the report took too long',
    { timeout: 120_000 },
    async () => {
      // The shortest bound allowed, and a daily report over 1,000,000 rows: several times that bound on
      // either database, even on a fast machine (400,000 rows had come within 150 ms on one).
      const slow = await startDashboardHarness({ env: { DASHBOARD_REPORT_TIMEOUT_MS: '100' } });
      try {
        const u = await createUser(slow);
        const client = new DashboardClient(slow);
        await client.login(u.email);
        const now = Date.now();
        await bulkUsage(slow.db, {
          accountId: u.id,
          keyId: 'key_bulk',
          rows: 1_000_000,
          from: now - 20 * 86_400_000,
          to: now,
          prefix: 'bulk-',
        });
        const res = await client.get('/usage/daily?days=30');
        expect(res.status).toBe(503);
        expect(res.body).toEqual({
          error: {
            message: expect.stringMatching(/^This report took longer than 0\.1 s and was stopped\./),
            type: 'server_error',
            code: 'service_unavailable',
          },
        });
        // A quick page of the same account is still answered.
        expect((await client.get('/usage?limit=5')).status).toBe(200);
      } finally {
        await slow.close();
      }
    },
  );
});
