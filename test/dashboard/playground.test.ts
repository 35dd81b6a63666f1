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
let user: { id: string; email: string };
let apiKey: string;

const BODY = { provider: 'prov-qwen', messages: [{ role: 'user', content: 'What is a tollgate?' }] };

async function balanceNano(): Promise<number> {
  const account = await h.server.store.getAccount(user.id);
  if (!account) throw new Error('no account');
  return account.balanceNano;
}

function nanoOf(usd: number): number {
  return Math.round(usd * 1e9);
}

beforeAll(async () => {
  h = await startDashboardHarness({ env: { STREAMING: 'on' } });
  user = await createUser(h, { usd: 5 });
  c = new DashboardClient(h);
  await c.login(user.email);
  apiKey = (await c.post('/keys', { name: 'laptop' })).body.key as string;
});
afterAll(async () => {
  await h?.close();
});

describe('the playground', () => {
  it('lists the models with their prices and whether streaming is on', async () => {
    const res = await c.get('/playground/models');
    expect(res.status).toBe(200);
    const data = res.body.data as { id: string; tollgate: { provider: string } }[];
    expect(data.map((m) => m.tollgate.provider)).toContain('prov-qwen');
    expect(res.body.streaming).toBe(true);
  });

  it('bills a call to the signed-in account exactly as an API call, labelled as the playground', async () => {
    const before = await balanceNano();
    const api = await h.chat(apiKey, BODY);
    expect(api.status).toBe(200);
    const apiCost = nanoOf((api.body.meta as { cost: { total: number } }).cost.total);
    expect(apiCost).toBeGreaterThan(0);
    const middle = await balanceNano();
    expect(before - middle).toBe(apiCost);

    const res = await c.post('/playground/chat', BODY);
    expect(res.status).toBe(200);
    const meta = res.body.meta as { cost: { total: number }; balance: number; provider: string };
    const usage = res.body.usage as { prompt_tokens: number; completion_tokens: number };
    const after = await balanceNano();
    // The same prompt on the same provider: the same tokens, the same cost, the balance down by it.
    expect(nanoOf(meta.cost.total)).toBe(apiCost);
    expect(middle - after).toBe(apiCost);
    expect(nanoOf(meta.balance)).toBe(after);
    expect(usage.prompt_tokens).toBe((api.body.usage as { prompt_tokens: number }).prompt_tokens);

    const rows = await h.server.store.listUsage(user.id, { limit: 10 });
    const row = rows.find((r) => r.requestId === res.body.id);
    expect(row?.keyId).toBe('playground');
    expect(row && row.inputCostNano + row.outputCostNano).toBe(apiCost);
    // The usage page names it.
    const page = await c.get('/usage?key_id=playground');
    const entries = page.body.data as { request_id: string; key: { name: string }; cost: number }[];
    expect(entries.map((e) => e.request_id)).toEqual([res.body.id]);
    expect(entries[0]?.key.name).toBe('Playground');
    expect(nanoOf(entries[0]?.cost ?? 0)).toBe(apiCost);
    expect((await h.server.store.ledgerCheck()).ok).toBe(true);
  });

  it('streams the answer when asked, billed the same way', async () => {
    const before = await balanceNano();
    const res = await c.post('/playground/chat', { ...BODY, stream: true });
    expect(res.status).toBe(200);
    expect(String(res.headers['content-type'])).toMatch(/text\/event-stream/);
    const events = res.text
      .split('\n\n')
      .map((e) => e.replace(/^data: /, '').trim())
      .filter((e) => e !== '' && e !== '[DONE]')
      .map(
        (e) =>
          JSON.parse(e) as {
            choices: { delta?: { content?: string } }[];
            meta?: { cost: { total: number } };
          },
      );
    const text = events.map((e) => e.choices[0]?.delta?.content ?? '').join('');
    expect(text.length).toBeGreaterThan(0);
    const last = events.findLast((e) => e.meta !== undefined);
    const cost = nanoOf(last?.meta?.cost.total ?? 0);
    expect(cost).toBeGreaterThan(0);
    expect(before - (await balanceNano())).toBe(cost);
    expect((await h.server.store.ledgerCheck()).ok).toBe(true);
  });

  it('refuses without a session, without the CSRF token, and a bad body in the API error shape', async () => {
    const anonymous = new DashboardClient(h);
    const none = await anonymous.post('/playground/chat', BODY);
    expect(none.status).toBe(401);
    expect(codeOf(none)).toBe('not_authenticated');
    const noCsrf = await c.request('POST', '/playground/chat', BODY, { 'x-csrf-token': 'wrong' });
    expect(noCsrf.status).toBe(403);
    expect(codeOf(noCsrf)).toBe('csrf_failed');
    const bad = await c.post('/playground/chat', { messages: [] });
    expect(bad.status).toBe(400);
    expect(codeOf(bad)).toBe('invalid_messages');
  });

  it('refuses a call the balance cannot pay with 402, counted as a playground refusal', async () => {
    const poor = await createUser(h, { usd: 0 });
    const pc = new DashboardClient(h);
    await pc.login(poor.email);
    const res = await pc.post('/playground/chat', BODY);
    expect(res.status).toBe(402);
    expect(codeOf(res)).toBe('insufficient_balance');
    const page = await pc.get('/usage');
    const entries = page.body.data as { key: { id: string }; error_code: string }[];
    expect(entries.map((e) => [e.key.id, e.error_code])).toEqual([['playground', 'insufficient_balance']]);
  });
});
