import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/harness.js';
import { type ScriptedUpstream, sseEvent, startScriptedUpstream } from '../helpers/scripted-upstream.js';

/**
 * A Messages request routed to prov-claude reaches it as sent — cache_control, thinking blocks with
 * their signatures, context_management, tools, the allowed anthropic-beta values — and its answer's
 * blocks come back unchanged; the cache reads in its usage are billed, the ledger stays consistent.
 */

let h: Harness;
let up: ScriptedUpstream;

beforeAll(async () => {
  up = await startScriptedUpstream();
  h = await startHarness({ env: { STREAMING: 'on', PROV_CLAUDE_BASE_URL: up.url } });
});

afterAll(async () => {
  await h?.close();
  await up?.close();
});

const thinkingBlock = {
  type: 'thinking',
  thinking: 'I should list the files.',
  signature: 'c2lnbmF0dXJlLW9uZQ==',
};
const request = {
  model: 'claude-sonnet-4-5',
  max_tokens: 32_000,
  thinking: { type: 'enabled', budget_tokens: 31_999 },
  context_management: { edits: [{ type: 'clear_tool_uses_20250919' }] },
  system: [{ type: 'text', text: 'You are a coding agent.', cache_control: { type: 'ephemeral' } }],
  tools: [
    {
      name: 'list_files',
      description: 'List files',
      input_schema: { type: 'object', properties: {} },
      cache_control: { type: 'ephemeral' },
    },
  ],
  messages: [
    {
      role: 'user',
      content: [{ type: 'text', text: 'What is here?', cache_control: { type: 'ephemeral' } }],
    },
    {
      role: 'assistant',
      content: [thinkingBlock, { type: 'tool_use', id: 'toolu_1', name: 'list_files', input: {} }],
    },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'a.txt b.txt' }] },
  ],
};

const answerThinking = { type: 'thinking', thinking: 'Two files.', signature: 'c2lnbmF0dXJlLXR3bw==' };
const answer = {
  id: 'msg_upstream_1',
  type: 'message',
  role: 'assistant',
  model: 'claude-sonnet-4-5-20250929',
  content: [
    answerThinking,
    { type: 'redacted_thinking', data: 'b3BhcXVl' },
    { type: 'text', text: 'a.txt and b.txt' },
  ],
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage: {
    input_tokens: 40,
    cache_creation_input_tokens: 10,
    cache_read_input_tokens: 2000,
    output_tokens: 30,
  },
};

async function post(body: unknown, headers: Record<string, string> = {}) {
  const res = await h.server.app.inject({
    method: 'POST',
    url: '/api/v1/messages',
    headers: { 'content-type': 'application/json', 'x-api-key': h.key, ...headers },
    payload: JSON.stringify(body),
  });
  return res;
}

describe('Messages door → prov-claude, passed through', () => {
  it('sends the body as written, with the allowed betas, and returns the blocks unchanged', async () => {
    up.reset();
    up.answer({ kind: 'json', body: answer });
    const before = await h.balanceNano();
    const res = await post(request, {
      'anthropic-beta':
        'interleaved-thinking-2025-05-14,context-1m-2025-08-07,fine-grained-tool-streaming-2025-05-14',
    });
    expect(res.statusCode).toBe(200);
    const sent = up.bodies[0] as Record<string, unknown>;
    expect(sent.system).toEqual(request.system);
    expect(sent.tools).toEqual(request.tools);
    expect(sent.messages).toEqual(request.messages);
    expect(sent.context_management).toEqual(request.context_management);
    expect(sent.thinking).toEqual(request.thinking);
    expect(sent.max_tokens).toBe(32_000);
    expect(up.headers[0]?.['anthropic-beta']).toBe(
      'interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14',
    );
    expect(res.headers['x-tollgate-dropped-params']).toBe('anthropic-beta:context-1m-2025-08-07');

    const body = JSON.parse(res.body) as Record<string, unknown>;
    expect(body.content).toEqual(answer.content);
    expect(body.id).toBe('msg_upstream_1');
    expect(body.usage).toEqual(answer.usage);
    const rows = await h.server.store.listUsage(h.accountId, { limit: 5 });
    expect(rows[0]?.promptTokens).toBe(2050);
    expect(rows[0]?.completionTokens).toBe(30);
    const charged = (rows[0]?.inputCostNano ?? 0) + (rows[0]?.outputCostNano ?? 0);
    expect(before - (await h.balanceNano())).toBe(charged);
    expect(await h.server.store.openHoldsNano(h.accountId)).toBe(0);
    expect((await h.server.store.ledgerCheck()).problems).toEqual([]);
  });

  it('lowers max_tokens (and a thinking budget above it) to what a small balance holds', async () => {
    up.reset();
    up.answer({ kind: 'json', body: answer });
    const small = await h.newAccount('0.02');
    const res = await post(request, { 'x-api-key': small.key });
    expect(res.statusCode).toBe(200);
    const sent = up.bodies[0] as { max_tokens: number; thinking: { budget_tokens: number } };
    expect(sent.max_tokens).toBeLessThan(32_000);
    expect(sent.max_tokens).toBeGreaterThan(1024);
    expect(sent.thinking.budget_tokens).toBeLessThan(sent.max_tokens);
    expect(await h.balanceNano(small.accountId)).toBeGreaterThanOrEqual(0);
    expect((await h.server.store.ledgerCheck()).problems).toEqual([]);
  });

  it("asks the upstream's own count_tokens with the counted fields as sent; estimates when it fails", async () => {
    up.reset();
    up.answer({ kind: 'json', body: { input_tokens: 4242 } });
    const { max_tokens: _cap, ...countable } = request;
    const res = await h.server.app.inject({
      method: 'POST',
      url: '/api/v1/messages/count_tokens',
      headers: {
        'content-type': 'application/json',
        'x-api-key': h.key,
        'anthropic-beta': 'context-management-2025-06-27,context-1m-2025-08-07',
      },
      payload: JSON.stringify({ ...countable, metadata: { user_id: 'u1' } }),
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ input_tokens: 4242 });
    expect(res.headers['x-tollgate-token-count']).toBe('upstream');
    const sent = up.bodies[0] as Record<string, unknown>;
    expect(Object.keys(sent).sort()).toEqual(
      ['context_management', 'messages', 'model', 'system', 'thinking', 'tools'].sort(),
    );
    expect(sent.messages).toEqual(request.messages);
    expect(sent.system).toEqual(request.system);
    expect(up.headers[0]?.['anthropic-beta']).toBe('context-management-2025-06-27');

    // An answer without a count: the gateway's estimate, never a fake 0.
    up.reset();
    up.answer({ kind: 'json', body: {} });
    const fallback = await h.server.app.inject({
      method: 'POST',
      url: '/api/v1/messages/count_tokens',
      headers: { 'content-type': 'application/json', 'x-api-key': h.key },
      payload: JSON.stringify(countable),
    });
    expect(fallback.statusCode).toBe(200);
    expect(fallback.headers['x-tollgate-token-count']).toBe('estimate');
    expect((JSON.parse(fallback.body) as { input_tokens: number }).input_tokens).toBeGreaterThan(0);
    // A count is free: nothing was held or charged.
    expect(await h.server.store.openHoldsNano(h.accountId)).toBe(0);
  });

  it('relays the upstream events of a stream as they came, signatures included', async () => {
    up.reset();
    const events = [
      sseEvent(
        {
          type: 'message_start',
          message: {
            ...answer,
            content: [],
            stop_reason: null,
            usage: { input_tokens: 40, cache_read_input_tokens: 2000, output_tokens: 1 },
          },
        },
        'message_start',
      ),
      sseEvent(
        {
          type: 'content_block_start',
          index: 0,
          content_block: { type: 'thinking', thinking: '', signature: '' },
        },
        'content_block_start',
      ),
      sseEvent(
        { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Two files.' } },
        'content_block_delta',
      ),
      sseEvent(
        {
          type: 'content_block_delta',
          index: 0,
          delta: { type: 'signature_delta', signature: 'c2lnbmF0dXJlLXR3bw==' },
        },
        'content_block_delta',
      ),
      sseEvent({ type: 'content_block_stop', index: 0 }, 'content_block_stop'),
      sseEvent(
        { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } },
        'content_block_start',
      ),
      sseEvent(
        { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'a.txt and b.txt' } },
        'content_block_delta',
      ),
      sseEvent({ type: 'content_block_stop', index: 1 }, 'content_block_stop'),
      sseEvent(
        {
          type: 'message_delta',
          delta: { stop_reason: 'end_turn', stop_sequence: null },
          usage: { output_tokens: 30 },
        },
        'message_delta',
      ),
      sseEvent({ type: 'message_stop' }, 'message_stop'),
    ];
    up.answer({ kind: 'sse', events, end: true });
    const before = await h.balanceNano();
    const res = await post({ ...request, stream: true });
    expect(res.statusCode).toBe(200);
    expect((up.bodies[0] as { stream: boolean }).stream).toBe(true);
    expect(res.body).toBe(events.join(''));
    const rows = await h.server.store.listUsage(h.accountId, { limit: 5 });
    expect(rows[0]?.promptTokens).toBe(2040);
    expect(rows[0]?.completionTokens).toBe(30);
    expect(before - (await h.balanceNano())).toBe(
      (rows[0]?.inputCostNano ?? 0) + (rows[0]?.outputCostNano ?? 0),
    );
    expect((await h.server.store.ledgerCheck()).problems).toEqual([]);
  });
});
