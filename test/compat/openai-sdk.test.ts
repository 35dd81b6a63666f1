import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nanoToUsd, tokenCost } from '../../src/money/money.js';
import { PROVIDER_NAMES } from '../../src/providers/types.js';
import type { Harness } from '../helpers/harness.js';
import { guardNetwork, simulatedUsage, startListening } from './compat-helpers.js';

interface Meta {
  provider: string;
  cost: { input: number; output: number; total: number };
  balance: number;
  duration_ms: number;
}

let h: Harness;
let client: OpenAI;
let baseURL: string;
let network: ReturnType<typeof guardNetwork>;
beforeAll(async () => {
  network = guardNetwork();
  ({ h, baseURL } = await startListening());
  client = new OpenAI({ apiKey: h.key, baseURL, maxRetries: 0 });
});
afterAll(async () => {
  network.restore();
  await h.close();
});

describe('the official openai SDK against a running Tollgate', () => {
  it('creates a chat completion, with meta readable from the raw body', async () => {
    const completion = await client.chat.completions.create({
      model: 'auto',
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'Say hello' },
      ],
    });
    expect(completion.object).toBe('chat.completion');
    expect(completion.id).toMatch(/^chatcmpl-/);
    expect(completion.choices[0]?.message.role).toBe('assistant');
    expect(completion.choices[0]?.message.content).toBeTruthy();
    expect(completion.usage?.total_tokens).toBe(
      (completion.usage?.prompt_tokens ?? 0) + (completion.usage?.completion_tokens ?? 0),
    );
    const meta = (completion as unknown as { meta: Meta }).meta;
    expect(meta.provider).toMatch(/^prov-/);
    expect(meta.balance).toBeLessThan(10);
  });

  it('reports the text, the usage the upstream reported, and a meta whose cost follows the prices', async () => {
    const completion = await client.chat.completions.create({
      model: 'prov-qwen',
      messages: [{ role: 'user', content: 'Tell me about harbors' }],
    });
    const expected = simulatedUsage('qwen', 'Tell me about harbors');
    expect(completion.choices[0]?.message.content).toMatch(
      /^Simulated reply from qwen to: Tell me about harbors/,
    );
    expect(completion.choices[0]?.finish_reason).toBe('stop');
    expect(completion.usage).toMatchObject({
      prompt_tokens: expected.prompt,
      completion_tokens: expected.completion,
      total_tokens: expected.prompt + expected.completion,
    });
    const meta = (completion as unknown as { meta: Meta }).meta;
    const qwen = h.config.providers['prov-qwen'];
    expect(meta.provider).toBe('prov-qwen');
    expect(meta.cost.input).toBe(nanoToUsd(tokenCost(expected.prompt, qwen.inputPriceNano)));
    expect(meta.cost.output).toBe(nanoToUsd(tokenCost(expected.completion, qwen.outputPriceNano)));
    expect(meta.cost.total).toBe(meta.cost.input + meta.cost.output);
    expect(Number.isInteger(meta.duration_ms)).toBe(true);
    expect(Math.round(meta.balance * 1e9)).toBe(await h.balanceNano());
  });

  it('selects a provider by model name and passes max_tokens', async () => {
    const completion = await client.chat.completions.create({
      model: h.config.providers['prov-gemini'].model,
      messages: [{ role: 'user', content: 'Count to ten please, slowly and with words' }],
      max_tokens: 4,
    });
    expect(completion.choices[0]?.finish_reason).toBe('length');
    expect(completion.usage?.completion_tokens).toBe(4);
    expect((completion as unknown as { meta: Meta }).meta.provider).toBe('prov-gemini');
  });

  it('models.list() iterates every provider model; models.retrieve() finds one whose id has a "/"', async () => {
    const seen: { id: string; owned_by: string }[] = [];
    for await (const model of client.models.list()) {
      // Alias entries (MODEL_ALIASES) come after the providers' own models.
      if (!(model as { tollgate?: { alias_of?: string } }).tollgate?.alias_of)
        seen.push({ id: model.id, owned_by: model.owned_by });
    }
    expect(seen.map((m) => m.owned_by).sort()).toEqual([...PROVIDER_NAMES].sort());
    for (const m of seen) {
      expect(m.id).toBe(h.config.providers[m.owned_by as keyof typeof h.config.providers].model);
    }
    const gptOss = h.config.providers['prov-gpt-oss-120b'].model;
    expect(gptOss).toContain('/');
    const one = await client.models.retrieve(gptOss);
    expect(one).toMatchObject({ id: gptOss, object: 'model', owned_by: 'prov-gpt-oss-120b' });
  });

  it('surfaces 401 as AuthenticationError with code invalid_api_key and type authentication_error', async () => {
    const bad = new OpenAI({ apiKey: 'sk-svc-00000000000000000000000000000000', baseURL, maxRetries: 0 });
    const err = await bad.chat.completions
      .create({ model: 'auto', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((err as InstanceType<typeof OpenAI.AuthenticationError>).code).toBe('invalid_api_key');
    expect((err as InstanceType<typeof OpenAI.AuthenticationError>).type).toBe('authentication_error');
  });

  it('surfaces 400 as BadRequestError (stream: true is refused)', async () => {
    const err = await client.chat.completions
      .create({ model: 'auto', messages: [{ role: 'user', content: 'hi' }], stream: true })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('streaming_not_supported');
  });

  it('surfaces 400 invalid_messages as BadRequestError with the message "Messages array is required"', async () => {
    const err = await client.chat.completions
      .create({ model: 'auto', messages: [] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    const apiError = err as InstanceType<typeof OpenAI.BadRequestError>;
    expect(apiError.status).toBe(400);
    expect(apiError.code).toBe('invalid_messages');
    expect(apiError.type).toBe('invalid_request_error');
    expect(apiError.message).toContain('Messages array is required');
  });

  it('surfaces 402 as an APIError with status 402 and code insufficient_balance', async () => {
    const { key } = await h.newAccount('0');
    const poor = new OpenAI({ apiKey: key, baseURL, maxRetries: 0 });
    const err = await poor.chat.completions
      .create({ model: 'auto', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(402);
    expect((err as InstanceType<typeof OpenAI.APIError>).code).toBe('insufficient_balance');
  });

  it('surfaces 404 model_not_found as NotFoundError', async () => {
    const err = await client.chat.completions
      .create({ model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect((err as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('model_not_found');
  });
});

describe('the SDK retry policy (maxRetries: 2) against Tollgate errors', () => {
  const retrying = () => new OpenAI({ apiKey: h.key, baseURL, maxRetries: 2 });

  it('does not retry a 502 that says x-should-retry: false (the upstream refused the gateway credentials)', async () => {
    const before = h.sim.requests('mistral').length;
    h.sim.setFault('mistral', { kind: 'status', status: 401, times: 3 });
    try {
      const err = await retrying()
        .chat.completions.create({ model: 'prov-mistral', messages: [{ role: 'user', content: 'hi' }] })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.InternalServerError);
      expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
      expect((err as InstanceType<typeof OpenAI.APIError>).code).toBe('provider_error');
      expect((err as InstanceType<typeof OpenAI.APIError>).headers?.get('x-should-retry')).toBe('false');
      expect(h.sim.requests('mistral').length - before).toBe(1);
    } finally {
      h.sim.setFault('mistral', null);
    }
  });

  it('does retry a 502 that says x-should-retry: true, and the retry is served', async () => {
    const before = h.sim.requests('mistral').length;
    h.sim.setFault('mistral', { kind: 'status', status: 500, times: 1 });
    const completion = await retrying().chat.completions.create({
      model: 'prov-mistral',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect((completion as unknown as { meta: Meta }).meta.provider).toBe('prov-mistral');
    expect(h.sim.requests('mistral').length - before).toBe(2);
  });

  it('never tried the network beyond loopback', () => {
    expect(network.refused).toEqual([]);
  });
});
