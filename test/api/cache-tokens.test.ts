import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { promptCostBound, promptSize, promptTokenBound } from '../../src/billing/estimate.js';
import { USAGE_CSV_HEADER, usageCsvLine } from '../../src/dashboard/csv.js';
import { formatNano, nanoToUsd, tokenCost } from '../../src/money/money.js';
import type { ProviderName } from '../../src/providers/types.js';
import { postChat, startListening } from '../compat/compat-helpers.js';
import { type Harness, hello, slugOf } from '../helpers/harness.js';

/**
 * Cache-priced prompt tokens (docs/api.md "Billing"), on each wire format, plain and streamed: the
 * simulator reports a prompt with parts read from and written to its cache the way each format does, and
 * the call is billed part by part at the catalog's default cache prices, to the nanodollar; the usage row
 * and the CSV carry the parts; the ledger check holds.
 */

let h: Harness;
let baseURL: string;

beforeAll(async () => {
  ({ h, baseURL } = await startListening({ env: { STREAMING: 'on' } }));
});
afterAll(async () => {
  await h.close();
});

interface Case {
  name: string;
  provider: ProviderName;
  prompt: number;
  read: number;
  write: number;
  completion: number;
  deepseek?: boolean;
  /** The input cost at the catalog's default prices, worked out by hand (nanodollars). */
  inputNano: number;
  /** Whether the format names cache writes (`cache_write_tokens` in the answer). */
  writes: boolean;
}

const CASES: Case[] = [
  // $0.28/M, hits at $0.028/M: 2,000 × 0.28 + 8,000 × 0.028 = 560 + 224 µ$.
  {
    name: 'OpenAI-compatible, DeepSeek’s hit and miss counts',
    provider: 'prov-deepseek',
    prompt: 10_000,
    read: 8_000,
    write: 0,
    completion: 50,
    deepseek: true,
    inputNano: 560_000 + 224_000,
    writes: false,
  },
  // $0.60/M, cached at $0.15/M: 2,105 × 0.6 + 10,240 × 0.15 = 1,263 + 1,536 µ$.
  {
    name: 'OpenAI-compatible, prompt_tokens_details.cached_tokens',
    provider: 'prov-kimi',
    prompt: 12_345,
    read: 10_240,
    write: 0,
    completion: 77,
    inputNano: 1_263_000 + 1_536_000,
    writes: false,
  },
  // $3/M, reads at $0.30/M, writes at $3.75/M: 1,001 × 3 + 5,000 × 0.3 + 3,000 × 3.75 µ$.
  {
    name: 'Anthropic, cache reads and writes beside input_tokens',
    provider: 'prov-claude',
    prompt: 9_001,
    read: 5_000,
    write: 3_000,
    completion: 123,
    inputNano: 3_003_000 + 1_500_000 + 11_250_000,
    writes: true,
  },
  // $0.30/M, cached at $0.03/M: 3,681 × 0.3 + 4,096 × 0.03 = 1,104.3 + 122.88 µ$.
  {
    name: 'Gemini, cachedContentTokenCount within promptTokenCount',
    provider: 'prov-gemini',
    prompt: 7_777,
    read: 4_096,
    write: 0,
    completion: 99,
    inputNano: 1_104_300 + 122_880,
    writes: false,
  },
];

interface Billed {
  usage: {
    prompt_tokens: number;
    completion_tokens: number;
    total_tokens: number;
    prompt_tokens_details?: { cached_tokens?: number; cache_write_tokens?: number };
  };
  meta: { cost: { input: number; output: number; total: number } };
}

describe('cache-priced prompt tokens', () => {
  for (const c of CASES) {
    it(`${c.name}: plain and streamed bill the cached parts at the cache prices`, async () => {
      const p = h.config.providers[c.provider];
      // The rule, from the configured prices: one ceil per part.
      const uncached = c.prompt - c.read - c.write;
      expect(
        tokenCost(uncached, p.inputPriceNano) +
          tokenCost(c.read, p.cacheReadPriceNano) +
          tokenCost(c.write, p.cacheWritePriceNano),
      ).toBe(c.inputNano);
      const outputNano = tokenCost(c.completion, p.outputPriceNano);

      const { accountId, key } = await h.newAccount('10');
      h.sim.setFault(slugOf(c.provider), {
        kind: 'usage',
        promptTokens: c.prompt,
        completionTokens: c.completion,
        cacheReadTokens: c.read,
        cacheWriteTokens: c.write,
        ...(c.deepseek ? { deepseek: true } : {}),
      });
      try {
        for (const stream of [false, true]) {
          const before = await h.balanceNano(accountId);
          const answer = await postChat(baseURL, key, {
            ...hello,
            model: c.provider,
            ...(stream ? { stream: true } : {}),
          });
          expect(answer.status, answer.text.slice(0, 300)).toBe(200);
          const billed = (stream ? answer.bill : JSON.parse(answer.text)) as Billed;
          expect(billed.usage.prompt_tokens).toBe(c.prompt);
          expect(billed.usage.completion_tokens).toBe(c.completion);
          expect(billed.usage.total_tokens).toBe(c.prompt + c.completion);
          expect(billed.usage.prompt_tokens_details).toEqual({
            cached_tokens: c.read,
            ...(c.writes ? { cache_write_tokens: c.write } : {}),
          });
          expect(billed.meta.cost.input).toBe(nanoToUsd(c.inputNano));
          expect(billed.meta.cost.output).toBe(nanoToUsd(outputNano));
          expect(billed.meta.cost.total).toBe(billed.meta.cost.input + billed.meta.cost.output);
          expect(before - (await h.balanceNano(accountId))).toBe(c.inputNano + outputNano);
        }
      } finally {
        h.sim.setFault(slugOf(c.provider), null);
      }

      const rows = await h.server.store.dashboard().usagePage(accountId, {}, { limit: 10 });
      expect(rows).toHaveLength(2);
      for (const row of rows) {
        expect(row).toMatchObject({
          provider: c.provider,
          promptTokens: c.prompt,
          cacheReadTokens: c.read,
          cacheWriteTokens: c.write,
          completionTokens: c.completion,
          costNano: c.inputNano + outputNano,
        });
        const fields = usageCsvLine(row).trimEnd().split(',');
        expect(fields[USAGE_CSV_HEADER.indexOf('cache_read_tokens')]).toBe(String(c.read));
        expect(fields[USAGE_CSV_HEADER.indexOf('cache_write_tokens')]).toBe(String(c.write));
        expect(fields[USAGE_CSV_HEADER.indexOf('prompt_tokens')]).toBe(String(c.prompt));
      }
      expect(await h.server.store.openHoldsNano(accountId)).toBe(0);
      expect((await h.server.store.ledgerCheck()).ok).toBe(true);
    });
  }

  it('holds for a prompt written whole to the cache at 1.25× the input price: 402, not a shortfall', async () => {
    // The hold prices every prompt token at the dearest prompt price. A balance that covers the prompt at
    // the input price only cannot pay for it all written to Claude's cache: the call is refused up front
    // rather than served and left partly unpaid.
    const p = h.config.providers['prov-claude'];
    expect(p.cacheWritePriceNano).toBe(3_750_000_000);
    const body = { messages: [{ role: 'user', content: 'Hi' }], model: 'prov-claude', max_tokens: 1 };
    const bound = promptTokenBound(promptSize({ messages: [{ role: 'user', content: 'Hi' }] }), p);
    const atInputPrice = tokenCost(bound, p.inputPriceNano) + tokenCost(1, p.outputPriceNano);
    const { accountId, key } = await h.newAccount(formatNano(atInputPrice));
    h.sim.setFault('claude', {
      kind: 'usage',
      promptTokens: bound,
      completionTokens: 1,
      cacheWriteTokens: bound,
    });
    try {
      const res = await h.chat(body, { key });
      expect(res.status, JSON.stringify(res.body)).toBe(402);
    } finally {
      h.sim.setFault('claude', null);
    }
    expect(await h.balanceNano(accountId)).toBe(atInputPrice);
    // With the balance the bound asks for, the same call is served and paid in full.
    const full = await h.newAccount(formatNano(promptCostBound(p, bound) + tokenCost(1, p.outputPriceNano)));
    h.sim.setFault('claude', {
      kind: 'usage',
      promptTokens: bound,
      completionTokens: 1,
      cacheWriteTokens: bound,
    });
    try {
      const res = await h.chat(body, { key: full.key });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    } finally {
      h.sim.setFault('claude', null);
    }
    const [row] = await h.server.store.dashboard().usagePage(full.accountId, {}, { limit: 1 });
    const cost = tokenCost(bound, p.cacheWritePriceNano) + tokenCost(1, p.outputPriceNano);
    expect(row).toMatchObject({ cacheWriteTokens: bound, costNano: cost });
    expect(await h.balanceNano(full.accountId)).toBe(
      promptCostBound(p, bound) + tokenCost(1, p.outputPriceNano) - cost,
    );
    expect((await h.server.store.ledgerCheck()).ok).toBe(true);
  });
});
