import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ env: { STREAMING: 'on' } });
});
afterAll(async () => {
  await h.close();
});

async function post(body: unknown, key: string = h.key) {
  const res = await h.server.app.inject({
    method: 'POST',
    url: '/api/v1/responses',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });
  return res;
}

interface Event {
  type: string;
  sequence_number: number;
  response?: {
    id: string;
    status: string;
    usage: { input_tokens: number; output_tokens: number; total_tokens: number; cost: number } | null;
    meta?: { cost: { total: number }; balance: number };
    error: { code: string } | null;
    incomplete_details: { reason: string } | null;
    output: Array<Record<string, unknown>>;
  };
}

/** The events of a Responses stream: each `event:` line names the `type` its data carries. */
function eventsOf(text: string): Event[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const name = /^event: (.+)$/m.exec(block)?.[1];
      const data = JSON.parse(/^data: (.+)$/m.exec(block)?.[1] ?? 'null') as Event;
      expect(data.type).toBe(name);
      return data;
    });
}

async function usageRow(responseId: string) {
  const rows = await h.server.store.listUsage(h.accountId, { limit: 200 });
  return rows.find((r) => r.requestId === `chatcmpl-${responseId.replace(/^resp_/, '')}`);
}

/** The body Codex CLI sends (its default tools: function, namespace and web_search). */
const codexBody = {
  model: 'prov-qwen',
  instructions: 'You are a coding agent.',
  input: [
    {
      type: 'message',
      role: 'developer',
      content: [{ type: 'input_text', text: '<permissions>none</permissions>' }],
    },
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Run the tests' }] },
  ],
  tools: [
    {
      type: 'function',
      name: 'shell',
      description: 'Runs a shell command',
      strict: false,
      parameters: { type: 'object', properties: { command: { type: 'array', items: { type: 'string' } } } },
    },
    {
      type: 'namespace',
      name: 'mcp_docs',
      description: 'Documentation server',
      tools: [{ type: 'function', name: 'search', parameters: { type: 'object', properties: {} } }],
    },
    { type: 'web_search', external_web_access: false },
  ],
  tool_choice: 'auto',
  parallel_tool_calls: false,
  reasoning: { effort: 'medium', summary: 'auto' },
  store: false,
  stream: true,
  include: ['reasoning.encrypted_content'],
  prompt_cache_key: '0199-session',
};

describe('POST /api/v1/responses', () => {
  it("takes Codex's request: web_search and include named as dropped, a function call, billed exactly", async () => {
    const before = await h.balanceNano();
    const res = await post(codexBody);
    expect(res.statusCode).toBe(200);
    expect(String(res.headers['content-type'])).toMatch(/^text\/event-stream/);
    const dropped = String(res.headers['x-tollgate-dropped-params']).split(',');
    expect(dropped).toEqual(expect.arrayContaining(['web_search', 'include']));
    const events = eventsOf(res.body);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const last = events.at(-1) as Event;
    expect(last.type).toBe('response.completed');
    const call = last.response?.output.find((o) => o.type === 'function_call');
    expect(call).toMatchObject({ name: 'shell', status: 'completed' });
    expect(events.some((e) => e.type === 'response.function_call_arguments.done')).toBe(true);
    const after = await h.balanceNano();
    const row = await usageRow(last.response?.id as string);
    expect(row?.status).toBe('ok');
    expect(before - after).toBe((row?.inputCostNano ?? 0) + (row?.outputCostNano ?? 0));
    expect(Math.round((last.response?.meta?.cost.total ?? 0) * 1e9)).toBe(before - after);
    expect(Math.round((last.response?.usage?.cost ?? 0) * 1e9)).toBe(before - after);
  });

  it('a capped answer is incomplete (max_output_tokens), plain and streamed, with usage', async () => {
    const plain = await post({
      model: 'prov-gemini',
      input: 'Count to ten please, slowly and with words',
      max_output_tokens: 4,
    });
    expect(plain.statusCode).toBe(200);
    const body = plain.json() as NonNullable<Event['response']>;
    expect(body.status).toBe('incomplete');
    expect(body.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect(body.usage?.output_tokens).toBe(4);

    const streamed = await post({
      model: 'prov-gemini',
      input: 'Count to ten please, slowly and with words',
      max_output_tokens: 4,
      stream: true,
    });
    const last = eventsOf(streamed.body).at(-1) as Event;
    expect(last.type).toBe('response.incomplete');
    expect(last.response?.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect(last.response?.usage?.output_tokens).toBe(4);
  });

  it('an upstream that breaks off mid-stream ends in response.failed, billed for what was delivered', async () => {
    h.sim.setFault('deepseek', { kind: 'cut', afterChunks: 3, times: 1 });
    const before = await h.balanceNano();
    const res = await post({
      model: 'prov-deepseek',
      input: 'Tell me a long story about lighthouses',
      stream: true,
    });
    const last = eventsOf(res.body).at(-1) as Event;
    expect(last.type).toBe('response.failed');
    expect(last.response?.status).toBe('failed');
    expect(last.response?.error?.code).toBeTruthy();
    expect(last.response?.usage?.output_tokens).toBeGreaterThan(0);
    const after = await h.balanceNano();
    expect(Math.round((last.response?.meta?.cost.total ?? 0) * 1e9)).toBe(before - after);
  });

  it('refuses what needs stored responses, and tools no upstream can run, in the OpenAI error shape', async () => {
    for (const [body, param] of [
      [{ input: 'hi', previous_response_id: 'resp_1' }, 'previous_response_id'],
      [{ input: 'hi', store: true }, 'store'],
      [{ input: 'hi', conversation: 'conv_1' }, 'conversation'],
      [{ input: [{ type: 'item_reference', id: 'msg_1' }] }, 'input[0]'],
      [{ input: 'hi', tools: [{ type: 'file_search', vector_store_ids: ['vs_1'] }] }, 'tools[0].type'],
    ] as const) {
      const res = await post(body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json()).toEqual({
        error: {
          message: expect.any(String),
          type: 'invalid_request_error',
          code: 'unsupported_parameter',
          param,
        },
      });
    }
    const orphan = await post({ input: [{ type: 'function_call_output', call_id: 'call_1', output: 'x' }] });
    expect(orphan.statusCode).toBe(400);
    expect(orphan.json()).toMatchObject({ error: { code: 'invalid_request', param: 'input[0].call_id' } });
    const stored = await h.server.app.inject({
      method: 'GET',
      url: '/api/v1/responses/resp_1',
      headers: { authorization: `Bearer ${h.key}` },
    });
    expect(stored.statusCode).toBe(404);
    expect(stored.json()).toMatchObject({ error: { code: 'not_found', type: 'invalid_request_error' } });
  });

  it('holds and refuses like the chat door: an empty balance gets 402 and no usage is charged', async () => {
    const poor = await h.newAccount('0');
    const res = await post({ model: 'prov-qwen', input: 'Hello there' }, poor.key);
    expect(res.statusCode).toBe(402);
    expect(res.json()).toMatchObject({ error: { code: 'insufficient_balance' } });
    expect(await h.balanceNano(poor.accountId)).toBe(0);
  });

  it('keeps the ledger consistent', async () => {
    expect((await h.server.store.ledgerCheck()).ok).toBe(true);
  });
});
