import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/harness.js';

let h: Harness;
let client: OpenAI;
let baseURL: string;
beforeAll(async () => {
  h = await startHarness();
  baseURL = `${await h.server.listen()}/api/v1`;
  client = new OpenAI({ apiKey: h.key, baseURL, maxRetries: 0 });
});
afterAll(async () => {
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
    const meta = (
      completion as unknown as { meta: { provider: string; balance: number; cost: { total: number } } }
    ).meta;
    expect(meta.provider).toMatch(/^prov-/);
    expect(meta.balance).toBeLessThan(10);
  });

  it('selects a provider by model name and passes max_tokens', async () => {
    const completion = await client.chat.completions.create({
      model: h.config.providers['prov-gemini'].model,
      messages: [{ role: 'user', content: 'Count to ten please, slowly and with words' }],
      max_tokens: 4,
    });
    expect(completion.choices[0]?.finish_reason).toBe('length');
    expect((completion as unknown as { meta: { provider: string } }).meta.provider).toBe('prov-gemini');
  });

  it('surfaces 401 as AuthenticationError with the spec code', async () => {
    const bad = new OpenAI({ apiKey: 'sk-svc-00000000000000000000000000000000', baseURL, maxRetries: 0 });
    const err = await bad.chat.completions
      .create({ model: 'auto', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((err as InstanceType<typeof OpenAI.AuthenticationError>).code).toBe('invalid_api_key');
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
  });
});
