import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { callCost } from '../../src/billing/billing.js';
import { fullHoldFor, type HoldPlanInput, promptSize } from '../../src/billing/estimate.js';
import type { ChatMessage } from '../../src/providers/types.js';
import { parseSse, type StreamChunk } from '../compat/compat-helpers.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { minimalPdf } from '../helpers/pdf.js';

/**
 * Files priced by what the upstream can bill for them. A 100-page PDF of a few kilobytes, which Claude
 * bills at 1,500 tokens a page and more, is held by its pages and charged what the upstream reports —
 * plain and streamed — or refused with a 402 when the balance cannot hold it. An upstream that reports a
 * prompt beyond any bound is still charged (never a failure at $0 for work it did), at most the hold.
 * Every test ends with the ledger consistent and no hold left open.
 */

let h: Harness;
const PAGES = 100;
/** What the finding measured Claude report for a 100-page PDF. */
const REPORTED_PROMPT = 150_010;
const REPORTED_COMPLETION = 20;
const MAX_TOKENS = 50;

const pdf = minimalPdf(PAGES);
const fileData = `data:application/pdf;base64,${pdf.toString('base64')}`;
const question = 'Sum up this document.';

const pdfRequest = {
  provider: 'prov-claude',
  max_tokens: MAX_TOKENS,
  messages: [
    {
      role: 'user',
      content: [
        { type: 'text', text: question },
        { type: 'file', file: { file_data: fileData, filename: 'doc.pdf' } },
      ],
    },
  ],
};

/** The request as the gateway reads it: what its hold is computed from. */
const pdfMessages: ChatMessage[] = [
  {
    role: 'user',
    content: [
      { type: 'text', text: question },
      {
        type: 'file',
        data: pdf.toString('base64'),
        mediaType: 'application/pdf',
        fileId: undefined,
        filename: 'doc.pdf',
      },
    ],
  },
];

type Body = {
  error?: { code: string };
  usage?: { prompt_tokens: number; completion_tokens: number };
  meta?: { cost: { input: number; output: number; total: number } };
};

const nano = (usd: number) => Math.round(usd * 1e9);

function holdOf(messages: ChatMessage[]): number {
  const plan: HoldPlanInput = {
    prompt: promptSize({ messages }),
    requestedMaxTokens: MAX_TOKENS,
    minCompletionTokens: h.config.minCompletionTokens,
    choices: 1,
  };
  return fullHoldFor([h.config.providers['prov-claude']], plan);
}

/** The bill chunk of a streamed answer read through `inject`. */
function billOf(res: { body: Record<string, unknown> }): StreamChunk | undefined {
  const text = String(res.body.unparsable ?? '');
  return parseSse(text)
    .filter((e) => e.data !== '[DONE]')
    .map((e) => JSON.parse(e.data) as StreamChunk)
    .find((c) => c.meta !== undefined);
}

async function expectLedgerClean(accountId: string): Promise<void> {
  expect(await h.server.store.openHoldsNano(accountId)).toBe(0);
  const report = await h.server.store.ledgerCheck();
  expect(report.problems).toEqual([]);
  expect(report.ok).toBe(true);
}

beforeAll(async () => {
  h = await startHarness({ env: { STREAMING: 'on' }, credit: '20' });
});
afterAll(async () => {
  await h.close();
});
beforeEach(() => {
  h.sim.reset();
});

describe('a 100-page PDF is held by its pages and charged what the upstream reports', () => {
  it('plain: 200, charged exactly the reported 150,010 prompt tokens, within the hold', async () => {
    h.sim.setFault('claude', {
      kind: 'usage',
      promptTokens: REPORTED_PROMPT,
      completionTokens: REPORTED_COMPLETION,
    });
    const before = await h.balanceNano();
    const res = await h.chat(pdfRequest);
    expect(res.status).toBe(200);
    const body = res.body as Body;
    const expected = callCost(h.config.providers['prov-claude'], REPORTED_PROMPT, REPORTED_COMPLETION);
    expect(body.usage?.prompt_tokens).toBe(REPORTED_PROMPT);
    expect(nano(body.meta?.cost.input ?? 0)).toBe(expected.inputNano);
    const charged = before - (await h.balanceNano());
    expect(charged).toBe(expected.inputNano + expected.outputNano);
    expect(charged).toBeLessThanOrEqual(holdOf(pdfMessages));
    await expectLedgerClean(h.accountId);
  });

  it('streamed: billed the reported 150,010 prompt tokens, within the hold', async () => {
    h.sim.setFault('claude', {
      kind: 'usage',
      promptTokens: REPORTED_PROMPT,
      completionTokens: REPORTED_COMPLETION,
    });
    const before = await h.balanceNano();
    const res = await h.chat({ ...pdfRequest, stream: true });
    expect(res.status).toBe(200);
    const bill = billOf(res);
    const expected = callCost(h.config.providers['prov-claude'], REPORTED_PROMPT, REPORTED_COMPLETION);
    expect(bill?.usage?.prompt_tokens).toBe(REPORTED_PROMPT);
    const charged = before - (await h.balanceNano());
    expect(charged).toBe(expected.inputNano + expected.outputNano);
    expect(nano(bill?.meta?.cost.total ?? 0)).toBe(charged);
    expect(charged).toBeLessThanOrEqual(holdOf(pdfMessages));
    await expectLedgerClean(h.accountId);
  });

  it('402 when the balance cannot hold its pages; nothing is charged and the upstream is not called', async () => {
    const poor = await h.newAccount('0.5');
    expect(holdOf(pdfMessages)).toBeGreaterThan(500_000_000);
    const calls = h.sim.requests('claude').length;
    const res = await h.chat(pdfRequest, { key: poor.key });
    expect(res.status).toBe(402);
    expect((res.body as Body).error?.code).toBe('insufficient_balance');
    expect(await h.balanceNano(poor.accountId)).toBe(500_000_000);
    expect(h.sim.requests('claude').length).toBe(calls);
    await expectLedgerClean(poor.accountId);
  });
});

describe('a prompt reported beyond any plausible bound is charged, at most the hold', () => {
  const textRequest = {
    provider: 'prov-claude',
    max_tokens: MAX_TOKENS,
    messages: [{ role: 'user', content: 'Hello there' }],
  };
  const textMessages: ChatMessage[] = [{ role: 'user', content: 'Hello there' }];

  it.each([false, true])('stream: %s → 200, charged the whole hold, no shortfall', async (stream) => {
    h.sim.setFault('claude', { kind: 'usage', promptTokens: 1_000_000_000, completionTokens: 5 });
    const before = await h.balanceNano();
    const res = await h.chat({ ...textRequest, stream });
    expect(res.status).toBe(200);
    const total = stream
      ? nano(billOf(res)?.meta?.cost.total ?? 0)
      : nano((res.body as Body).meta?.cost.total ?? 0);
    const charged = before - (await h.balanceNano());
    expect(charged).toBe(total);
    expect(charged).toBe(holdOf(textMessages));
    const rows = await h.server.store.listUsage(h.accountId, { limit: 1 });
    expect(rows[0]).toMatchObject({ status: 'ok', promptTokens: 1_000_000_000 });
    await expectLedgerClean(h.accountId);
  });
});
