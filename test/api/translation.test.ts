import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

const conversation = [
  { role: 'system', content: 'You are a pirate.' },
  { role: 'user', content: 'Hello' },
  { role: 'assistant', content: 'Arr!' },
  { role: 'user', content: 'Where is the treasure?' },
];

function lastRequest(slug: string) {
  const r = h.sim.requests(slug).at(-1);
  if (!r) throw new Error(`no request recorded for ${slug}`);
  return r as { path: string; headers: Record<string, string | undefined>; body: Record<string, unknown> };
}

describe('what each wire format receives (through the gateway, recorded by the simulator)', () => {
  it.each([
    'prov-deepseek',
    'prov-qwen',
    'prov-kimi',
    'prov-gpt-oss-120b',
    'prov-llama',
    'prov-mistral',
  ] as const)(
    '%s: OpenAI chat format, Bearer credential, system stays a message, cap always sent',
    async (provider) => {
      const res = await h.chat({ provider, messages: conversation, temperature: 0.5 });
      expect(res.status).toBe(200);
      const req = lastRequest(h.slug(provider));
      expect(req.path).toMatch(/\/v1\/chat\/completions$/);
      expect(req.headers.authorization).toBe(`Bearer upstream-secret-${h.slug(provider).replace(/-/g, '_')}`);
      expect(req.body.model).toBe(h.config.providers[provider].model);
      expect(req.body.messages).toEqual(conversation);
      expect(req.body.max_tokens).toBe(h.config.providers[provider].defaultMaxTokens);
      expect(req.body.temperature).toBe(0.5);
      expect(req.body.stream).not.toBe(true);
    },
  );

  it('prov-claude: Anthropic Messages, x-api-key + anthropic-version, system top-level, max_tokens required', async () => {
    const res = await h.chat({
      provider: 'prov-claude',
      messages: conversation,
      max_tokens: 100,
      top_p: 0.8,
      stop: ['X'],
    });
    expect(res.status).toBe(200);
    const req = lastRequest('claude');
    expect(req.path).toMatch(/\/v1\/messages$/);
    expect(req.headers['x-api-key']).toBe('upstream-secret-claude');
    expect(req.headers['anthropic-version']).toBeTruthy();
    expect(req.headers.authorization).toBeUndefined();
    expect(req.body.system).toBe('You are a pirate.');
    const messages = req.body.messages as Array<{ role: string; content: unknown }>;
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(req.body.max_tokens).toBe(100);
    expect(req.body.top_p).toBe(0.8);
    expect(req.body.stop_sequences).toEqual(['X']);
    const body = res.body as {
      usage: { prompt_tokens: number; completion_tokens: number };
      choices: Array<{ finish_reason: string }>;
    };
    expect(body.usage.prompt_tokens).toBeGreaterThan(0);
    expect(body.choices[0]?.finish_reason).toBe('stop');
  });

  it('prov-gemini: generateContent, x-goog-api-key, systemInstruction, roles user/model', async () => {
    const res = await h.chat({
      provider: 'prov-gemini',
      messages: conversation,
      max_tokens: 100,
      temperature: 0.2,
    });
    expect(res.status).toBe(200);
    const req = lastRequest('gemini');
    expect(req.path).toBe(
      `/gemini/gemini/v1beta/models/${h.config.providers['prov-gemini'].model}:generateContent`,
    );
    expect(req.headers['x-goog-api-key']).toBe('upstream-secret-gemini');
    expect(req.body.systemInstruction).toEqual({ parts: [{ text: 'You are a pirate.' }] });
    const contents = req.body.contents as Array<{ role: string; parts: Array<{ text: string }> }>;
    expect(contents.map((c) => c.role)).toEqual(['user', 'model', 'user']);
    expect(contents[1]?.parts[0]?.text).toBe('Arr!');
    expect(req.body.generationConfig).toMatchObject({ maxOutputTokens: 100, temperature: 0.2 });
  });

  it.each(['prov-claude', 'prov-gemini', 'prov-deepseek'] as const)(
    '%s: the cap reached maps to finish_reason "length"',
    async (provider) => {
      const res = await h.chat({
        provider,
        messages: [
          { role: 'user', content: 'Please write a very long essay about the history of the printing press' },
        ],
        max_tokens: 2,
      });
      expect(res.status).toBe(200);
      expect((res.body as { choices: Array<{ finish_reason: string }> }).choices[0]?.finish_reason).toBe(
        'length',
      );
    },
  );
});

describe('sampling settings a wire format lacks are left out, and the answer says so', () => {
  it.each([
    [
      'prov-claude',
      { seed: 7, presence_penalty: 0.5, temperature: 0.3 },
      'seed,presence_penalty',
      ['"seed"', 'presence_penalty'],
    ],
    ['prov-gemini', { user: 'u-1', logit_bias: { '50256': -100 } }, 'user,logit_bias', ['u-1', '50256']],
  ] as const)('%s: x-tollgate-dropped-params names them', async (provider, extra, header, absent) => {
    const res = await h.chat({ provider, messages: conversation, ...extra });
    expect(res.status).toBe(200);
    expect(String(res.headers['x-tollgate-dropped-params']).split(',').sort()).toEqual(
      header.split(',').sort(),
    );
    const sent = lastRequest(h.slug(provider)).body;
    for (const text of absent) expect(JSON.stringify(sent)).not.toContain(text);
  });

  it('an OpenAI-compatible provider takes every field: no header', async () => {
    const res = await h.chat({ provider: 'prov-qwen', messages: conversation, seed: 7, user: 'u-1' });
    expect(res.status).toBe(200);
    expect(res.headers['x-tollgate-dropped-params']).toBeUndefined();
    expect(lastRequest('qwen').body).toMatchObject({ seed: 7, user: 'u-1' });
  });
});
