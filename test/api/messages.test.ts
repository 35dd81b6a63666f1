import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/harness.js';

/**
 * The Anthropic Messages door (`POST /api/v1/messages`) against the simulator's Anthropic format: plain
 * and streamed answers, the key as `x-api-key` or Bearer, errors in Anthropic's shape, count_tokens, and
 * exact billing — the balance falls by what the usage row says and what the client was told.
 */

let h: Harness;

beforeAll(async () => {
  h = await startHarness({ env: { STREAMING: 'on' } });
});

afterAll(async () => {
  await h?.close();
});

const hello = {
  model: 'claude-sonnet-4-5',
  max_tokens: 200,
  messages: [{ role: 'user', content: 'Hello there' }],
};

async function post(
  path: string,
  body: unknown,
  headers: Record<string, string> = { 'x-api-key': h.key },
): Promise<{
  status: number;
  headers: Record<string, unknown>;
  text: string;
  json: Record<string, unknown>;
}> {
  const res = await h.server.app.inject({
    method: 'POST',
    url: `/api/v1${path}`,
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...headers },
    payload: JSON.stringify(body),
  });
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(res.body) as Record<string, unknown>;
  } catch {}
  return { status: res.statusCode, headers: res.headers, text: res.body, json };
}

async function expectSettled(accountId: string): Promise<void> {
  expect(await h.server.store.openHoldsNano(accountId)).toBe(0);
  const report = await h.server.store.ledgerCheck();
  expect(report.problems).toEqual([]);
}

/** The events of an Anthropic stream, in order: name and parsed data. */
function events(text: string): { name: string; data: Record<string, unknown> }[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const name = /^event: (.*)$/m.exec(block)?.[1] ?? '';
      const data = JSON.parse(/^data: (.*)$/m.exec(block)?.[1] ?? '{}') as Record<string, unknown>;
      return { name, data };
    });
}

describe('POST /api/v1/messages', () => {
  it('answers a plain call in Anthropic format, billed exactly (x-api-key)', async () => {
    const before = await h.balanceNano();
    const res = await post('/messages', hello);
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ type: 'message', role: 'assistant', stop_reason: 'end_turn' });
    const content = res.json.content as { type: string; text: string }[];
    expect(content[0]?.type).toBe('text');
    const usage = res.json.usage as Record<string, number>;
    expect(usage.input_tokens).toBeGreaterThan(0);
    expect(usage.output_tokens).toBeGreaterThan(0);
    const meta = res.json.meta as { provider: string; cost: { total: number } };
    expect(meta.provider).toBe('prov-claude');
    const after = await h.balanceNano();
    const rows = await h.server.store.listUsage(h.accountId, { limit: 50 });
    const row = rows[0];
    expect(row?.provider).toBe('prov-claude');
    expect(row?.promptTokens).toBe(
      (usage.input_tokens ?? 0) +
        (usage.cache_read_input_tokens ?? 0) +
        (usage.cache_creation_input_tokens ?? 0),
    );
    expect(row?.completionTokens).toBe(usage.output_tokens);
    const charged = (row?.inputCostNano ?? 0) + (row?.outputCostNano ?? 0);
    expect(before - after).toBe(charged);
    expect(Math.round(meta.cost.total * 1e9)).toBe(charged);
    await expectSettled(h.accountId);
  });

  it('accepts the key as Bearer too', async () => {
    const res = await post('/messages', hello, { authorization: `Bearer ${h.key}` });
    expect(res.status).toBe(200);
  });

  it('streams Anthropic events, the usage in message_delta, billed as told', async () => {
    const before = await h.balanceNano();
    const res = await post('/messages', { ...hello, stream: true });
    expect(res.status).toBe(200);
    expect(String(res.headers['content-type'])).toContain('text/event-stream');
    const list = events(res.text);
    const names = list.map((e) => e.name);
    expect(names[0]).toBe('message_start');
    expect(names.at(-1)).toBe('message_stop');
    expect(names).toContain('content_block_delta');
    const delta = list.find((e) => e.name === 'message_delta');
    const usage = delta?.data.usage as Record<string, number>;
    expect(usage.output_tokens).toBeGreaterThan(0);
    const text = list
      .filter((e) => e.name === 'content_block_delta')
      .map((e) => (e.data.delta as { text?: string }).text ?? '')
      .join('');
    expect(text.length).toBeGreaterThan(0);
    const rows = await h.server.store.listUsage(h.accountId, { limit: 50 });
    const row = rows[0];
    expect(row?.completionTokens).toBe(usage.output_tokens);
    expect(before - (await h.balanceNano())).toBe((row?.inputCostNano ?? 0) + (row?.outputCostNano ?? 0));
    await expectSettled(h.accountId);
  });

  it('answers errors in Anthropic shape with the matching statuses', async () => {
    const bad = await post('/messages', hello, { 'x-api-key': 'sk-svc-not-a-real-key-000000000000' });
    expect(bad.status).toBe(401);
    expect(bad.json).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });

    const noCap = await post('/messages', { model: hello.model, messages: hello.messages });
    expect(noCap.status).toBe(400);
    expect(noCap.json).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect(String((noCap.json.error as { message: string }).message)).toContain('max_tokens');

    const unknown = await post('/messages', { ...hello, model: 'gpt-unheard-of' });
    expect(unknown.status).toBe(404);
    expect(unknown.json).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    expect(String((unknown.json.error as { message: string }).message)).toContain('gateway does not serve');

    const poor = await h.newAccount('0.000000001');
    const broke = await post('/messages', hello, { 'x-api-key': poor.key });
    expect(broke.status).toBe(402);
    expect(broke.json).toMatchObject({ type: 'error', error: { type: 'billing_error' } });
  });

  it('serves a large max_tokens on a small balance, lowered to what the hold affords', async () => {
    const small = await h.newAccount('0.05');
    const res = await post('/messages', { ...hello, max_tokens: 64_000 }, { 'x-api-key': small.key });
    expect(res.status).toBe(200);
    expect(await h.balanceNano(small.accountId)).toBeGreaterThanOrEqual(0);
    await expectSettled(small.accountId);
  });

  it('counts tokens where the upstream has no count: an estimate above zero, growing with the prompt', async () => {
    const short = await post('/messages/count_tokens', { model: 'prov-qwen', messages: hello.messages });
    expect(short.status).toBe(200);
    expect(short.headers['x-tollgate-token-count']).toBe('estimate');
    const long = await post('/messages/count_tokens', {
      model: 'prov-qwen',
      messages: [{ role: 'user', content: 'Hello there, '.repeat(50) }],
    });
    const a = short.json.input_tokens as number;
    const b = long.json.input_tokens as number;
    expect(a).toBeGreaterThan(0);
    expect(b).toBeGreaterThan(a);
  });

  it("counts tokens with an Anthropic upstream's own count: the prompt its completion then reports", async () => {
    const request = {
      model: 'claude-sonnet-4-5',
      system: [{ type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } }],
      tools: [
        { name: 'list_files', input_schema: { type: 'object', properties: { dir: { type: 'string' } } } },
      ],
      messages: [{ role: 'user', content: 'What files are in the current directory?' }],
    };
    const counted = await post('/messages/count_tokens', request);
    expect(counted.status, counted.text).toBe(200);
    expect(counted.headers['x-tollgate-token-count']).toBe('upstream');
    const done = await post('/messages', { ...request, max_tokens: 200 });
    expect(done.status).toBe(200);
    const usage = done.json.usage as Record<string, number>;
    const reported =
      (usage.input_tokens ?? 0) +
      (usage.cache_creation_input_tokens ?? 0) +
      (usage.cache_read_input_tokens ?? 0);
    expect(counted.json.input_tokens).toBe(reported);
    // The gateway's own estimate of the same prompt is another number: the answer above was the upstream's.
    const estimated = await post('/messages/count_tokens', { ...request, model: 'prov-qwen' });
    expect(estimated.headers['x-tollgate-token-count']).toBe('estimate');
    expect(estimated.json.input_tokens).toBeGreaterThan(0);
    expect(estimated.json.input_tokens).not.toBe(counted.json.input_tokens);
  });

  it("carries Claude Code's system turns: passed through with their beta, translated elsewhere", async () => {
    const agent = {
      model: 'claude-sonnet-4-5',
      max_tokens: 128_000,
      thinking: { type: 'adaptive', display: 'omitted' },
      context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
      output_config: { effort: 'medium' },
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Say hello' }] },
        {
          role: 'system',
          content: [{ type: 'text', text: 'The working directory is /tmp.' }],
          output_config: { effort: 'medium' },
        },
      ],
    };
    const betas = 'context-management-2025-06-27,per-turn-control-2026-07-01,effort-2025-11-24';
    const passed = await post('/messages', agent, { 'x-api-key': h.key, 'anthropic-beta': betas });
    expect(passed.status, passed.text).toBe(200);
    expect(passed.headers['x-tollgate-dropped-params']).toBeUndefined();
    // Without the beta the upstream refuses the system turn, as Anthropic does: it was passed as sent.
    const refused = await post('/messages', agent, {
      'x-api-key': h.key,
      'anthropic-beta': 'context-management-2025-06-27',
    });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.json)).toContain('messages.1.role');

    const elsewhere = await post(
      '/messages',
      { ...agent, model: 'prov-qwen' },
      { 'x-api-key': h.key, 'anthropic-beta': betas },
    );
    expect(elsewhere.status, elsewhere.text).toBe(200);
    const dropped = String(elsewhere.headers['x-tollgate-dropped-params']).split(',');
    expect(dropped).toEqual(expect.arrayContaining(['context_management', 'output_config']));
    const qwen = h.sim.requests('qwen').at(-1)?.body as { messages: { role: string; content: string }[] };
    expect(qwen.messages.at(-1)).toEqual({ role: 'system', content: 'The working directory is /tmp.' });
    await expectSettled(h.accountId);
  });

  it('refuses a system turn as the first message', async () => {
    const res = await post('/messages', {
      ...hello,
      messages: [{ role: 'system', content: 'x' }, ...hello.messages],
    });
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
  });

  it("answers Claude Code's HEAD probe of its base URL", async () => {
    const res = await h.server.app.inject({ method: 'HEAD', url: '/api' });
    expect(res.statusCode).toBe(200);
  });
});
