import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nanoToUsd, tokenCost } from '../../src/money/money.js';
import { PROVIDER_NAMES, type ProviderName } from '../../src/providers/types.js';
import { type Harness, hello, startHarness } from '../helpers/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

interface Body {
  id: string;
  object: string;
  created: number;
  model: string;
  choices: Array<{ index: number; message: { role: string; content: string }; finish_reason: string }>;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
  meta: {
    provider: ProviderName;
    cost: { input: number; output: number; total: number };
    balance: number;
    duration_ms: number;
  };
}

describe('POST /api/v1/chat/completions — success', () => {
  it('returns the documented response body with meta, and charges exactly the reported cost', async () => {
    const before = await h.balanceNano();
    const res = await h.chat({ ...hello, provider: 'prov-deepseek' });
    expect(res.status).toBe(200);
    const body = res.body as unknown as Body;
    expect(body.id).toMatch(/^chatcmpl-[A-Za-z0-9]{29}$/);
    expect(body.object).toBe('chat.completion');
    expect(Number.isInteger(body.created)).toBe(true);
    expect(Math.abs(body.created - Date.now() / 1000)).toBeLessThan(5);
    expect(body.model).toBe(h.config.providers['prov-deepseek'].model);
    expect(body.choices).toHaveLength(1);
    expect(body.choices[0]?.index).toBe(0);
    expect(body.choices[0]?.message.role).toBe('assistant');
    expect(typeof body.choices[0]?.message.content).toBe('string');
    expect(body.choices[0]?.message.content.length).toBeGreaterThan(0);
    expect(body.choices[0]?.finish_reason).toBe('stop');
    expect(body.usage.prompt_tokens).toBeGreaterThan(0);
    expect(body.usage.completion_tokens).toBeGreaterThan(0);
    expect(body.usage.total_tokens).toBe(body.usage.prompt_tokens + body.usage.completion_tokens);
    expect(body.meta.provider).toBe('prov-deepseek');
    expect(Number.isInteger(body.meta.duration_ms)).toBe(true);
    expect(body.meta.duration_ms).toBeGreaterThanOrEqual(0);

    const p = h.config.providers['prov-deepseek'];
    const inputNano = tokenCost(body.usage.prompt_tokens, p.inputPriceNano);
    const outputNano = tokenCost(body.usage.completion_tokens, p.outputPriceNano);
    expect(body.meta.cost.input).toBe(nanoToUsd(inputNano));
    expect(body.meta.cost.output).toBe(nanoToUsd(outputNano));
    // The total is input + output, exactly as JavaScript numbers (docs/api.md, "Response (200)").
    expect(body.meta.cost.total).toBe(body.meta.cost.input + body.meta.cost.output);

    const after = await h.balanceNano();
    expect(before - after).toBe(inputNano + outputNano);
    expect(body.meta.balance).toBe(nanoToUsd(after));
    expect(res.headers['x-request-id']).toBeTruthy();
  });

  it('sends the body as JSON in UTF-8 with its exact byte length, non-ASCII text included', async () => {
    const res = await h.server.app.inject({
      method: 'POST',
      url: '/api/v1/chat/completions',
      headers: { authorization: `Bearer ${h.key}`, 'content-type': 'application/json' },
      payload: JSON.stringify({
        ...hello,
        provider: 'prov-deepseek',
        messages: [{ role: 'user', content: 'Grüße, 東京 🚀' }],
      }),
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(Number(res.headers['content-length'])).toBe(res.rawPayload.length);
    const body = JSON.parse(res.rawPayload.toString('utf8')) as Body;
    // The simulator echoes words of the prompt and writes an ellipsis: characters of one, two, three and
    // four bytes in UTF-8, all of which must come back whole.
    const content = body.choices[0]?.message.content ?? '';
    expect(content).toContain('…');
    expect(content).toMatch(/Grüße|東京|🚀/);
    expect(Buffer.byteLength(JSON.stringify(body))).toBe(res.rawPayload.length);
  });

  it('writes one usage row per request and keeps the ledger invariant', async () => {
    const res = await h.chat({ ...hello, provider: 'prov-qwen' });
    expect(res.status).toBe(200);
    const rows = await h.server.store.listUsage(h.accountId, { limit: 50 });
    const row = rows.find((r) => r.requestId === res.body.id);
    expect(row).toMatchObject({
      provider: 'prov-qwen',
      status: 'ok',
      httpStatus: 200,
      usageEstimated: false,
    });
    const report = await h.server.store.ledgerCheck();
    expect(report).toMatchObject({ ok: true, problems: [] });
  });

  it.each(PROVIDER_NAMES)('serves %s when named in provider and in model', async (name) => {
    const byProvider = await h.chat({ ...hello, provider: name });
    expect(byProvider.status).toBe(200);
    expect((byProvider.body as unknown as Body).meta.provider).toBe(name);
    const byModelField = await h.chat({ ...hello, model: name });
    expect(byModelField.status).toBe(200);
    expect((byModelField.body as unknown as Body).meta.provider).toBe(name);
    const byModelName = await h.chat({ ...hello, model: h.config.providers[name].model });
    expect(byModelName.status).toBe(200);
    expect((byModelName.body as unknown as Body).meta.provider).toBe(name);
  });

  it('accepts provider together with "auto", its own name or its model', async () => {
    for (const model of ['auto', 'prov-mistral', h.config.providers['prov-mistral'].model]) {
      const res = await h.chat({ ...hello, provider: 'prov-mistral', model });
      expect(res.status).toBe(200);
      expect((res.body as unknown as Body).meta.provider).toBe('prov-mistral');
    }
  });

  it('rotates auto requests round-robin over the four auto providers', async () => {
    const served: string[] = [];
    for (let i = 0; i < 12; i++) {
      const res = await h.chat(i % 2 === 0 ? hello : { ...hello, model: 'auto' });
      expect(res.status).toBe(200);
      served.push((res.body as unknown as Body).meta.provider);
    }
    const auto = ['prov-deepseek', 'prov-qwen', 'prov-kimi', 'prov-gpt-oss-120b'];
    const start = auto.indexOf(served[0] as string);
    expect(start).toBeGreaterThanOrEqual(0);
    expect(served).toEqual(Array.from({ length: 12 }, (_, i) => auto[(start + i) % 4]));
  });

  it('joins text content parts and passes sampling parameters through', async () => {
    h.sim.reset();
    const res = await h.chat({
      provider: 'prov-kimi',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'part one' },
            { type: 'text', text: 'part two' },
          ],
        },
      ],
      temperature: 0.3,
      top_p: 0.9,
      max_tokens: 50,
      stop: ['END'],
      seed: 7,
    });
    expect(res.status).toBe(200);
    const sent = h.sim.requests('kimi').at(-1)?.body as Record<string, unknown>;
    expect(sent.messages).toEqual([{ role: 'user', content: 'part one\npart two' }]);
    expect(sent).toMatchObject({ temperature: 0.3, top_p: 0.9, max_tokens: 50, stop: ['END'], seed: 7 });
  });

  it('reports finish_reason "length" and bills only the capped completion when max_tokens is reached', async () => {
    const res = await h.chat({
      provider: 'prov-claude',
      messages: [{ role: 'user', content: 'Tell me a long story about the sea and the wind and the stars' }],
      max_tokens: 3,
    });
    expect(res.status).toBe(200);
    const body = res.body as unknown as Body;
    expect(body.choices[0]?.finish_reason).toBe('length');
    expect(body.usage.completion_tokens).toBeLessThanOrEqual(3);
  });

  it('accepts usage values of zero and bills nothing for them', async () => {
    h.sim.setFault('mistral', { kind: 'usage', promptTokens: 0, completionTokens: 0 });
    const before = await h.balanceNano();
    const res = await h.chat({ ...hello, provider: 'prov-mistral' });
    h.sim.setFault('mistral', null);
    expect(res.status).toBe(200);
    const body = res.body as unknown as Body;
    expect(body.usage).toEqual({
      prompt_tokens: 0,
      completion_tokens: 0,
      total_tokens: 0,
      prompt_tokens_details: { cached_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0 },
      cost: 0,
    });
    expect(body.meta.cost).toEqual({ input: 0, output: 0, total: 0 });
    expect(await h.balanceNano()).toBe(before);
  });

  it('counts tokens locally when the upstream reports no usage, and marks the row estimated', async () => {
    h.sim.setFault('llama', { kind: 'no_usage' });
    const res = await h.chat({ ...hello, provider: 'prov-llama' });
    h.sim.setFault('llama', null);
    expect(res.status).toBe(200);
    const body = res.body as unknown as Body;
    expect(body.usage.prompt_tokens).toBeGreaterThan(0);
    expect(body.usage.completion_tokens).toBeGreaterThan(0);
    const rows = await h.server.store.listUsage(h.accountId, { limit: 5 });
    expect(rows.find((r) => r.requestId === body.id)?.usageEstimated).toBe(true);
  });
});
