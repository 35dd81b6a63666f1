import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, hello, startHarness } from '../helpers/harness.js';

/** A provider an operator prices at 0 (e.g. a local vLLM) is served and charges nothing. */
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ env: { PROV_LLAMA_INPUT_PRICE: '0', PROV_LLAMA_OUTPUT_PRICE: '0' } });
});
afterAll(async () => {
  await h.close();
});

describe('a provider priced at zero', () => {
  it('serves a funded account without charging it', async () => {
    const before = await h.balanceNano();
    const res = await h.chat({ ...hello, provider: 'prov-llama' });
    expect(res.status).toBe(200);
    const meta = res.body.meta as { provider: string; cost: { total: number } };
    expect(meta.provider).toBe('prov-llama');
    expect(meta.cost.total).toBe(0);
    expect(await h.balanceNano()).toBe(before);
  });

  it('serves an account with a zero balance too, with or without max_tokens', async () => {
    const empty = await h.newAccount('0');
    for (const body of [
      { ...hello, provider: 'prov-llama' },
      { ...hello, provider: 'prov-llama', max_tokens: 50 },
    ]) {
      const res = await h.chat(body, { key: empty.key });
      expect(res.status).toBe(200);
    }
    expect(await h.balanceNano(empty.accountId)).toBe(0);
    expect((await h.server.store.ledgerCheck()).ok).toBe(true);
  });
});
