import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  callCostBound,
  type HoldPlanInput,
  promptSize,
  promptTokenBound,
} from '../../src/billing/estimate.js';
import { formatNano } from '../../src/money/money.js';
import { type Harness, startHarness } from '../helpers/harness.js';

let h: Harness;
let url: string;
beforeAll(async () => {
  h = await startHarness({ simLatencyMs: 5 });
  url = await h.server.listen();
});
afterAll(async () => {
  await h.close();
});

function planOf(messages: { role: 'user'; content: string }[], maxTokens: number): HoldPlanInput {
  return {
    prompt: promptSize({ messages }),
    requestedMaxTokens: maxTokens,
    minCompletionTokens: 16,
    choices: 1,
  };
}

describe('no overspend under concurrency', () => {
  it('a balance covering N calls serves exactly N of 4N concurrent calls; the rest get 402', async () => {
    const N = 25;
    const maxTokens = 20;
    const messages = [{ role: 'user' as const, content: 'How much is two plus two?' }];
    const provider = h.config.providers['prov-deepseek'];
    const plan = planOf(messages, maxTokens);
    const bound = promptTokenBound(plan.prompt, provider);
    // The upstream reports the largest usage the hold allows, so each call costs exactly its hold.
    h.sim.setFault('deepseek', { kind: 'usage', promptTokens: bound, completionTokens: maxTokens } as never);
    const perCall = callCostBound(provider, plan, maxTokens);
    const { accountId, key } = await h.newAccount(formatNano(perCall * N));

    const responses = await Promise.all(
      Array.from({ length: 4 * N }, () =>
        fetch(`${url}/api/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ provider: 'prov-deepseek', messages, max_tokens: maxTokens }),
        }).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, unknown> })),
      ),
    );
    h.sim.setFault('deepseek', null);

    const served = responses.filter((r) => r.status === 200);
    const refused = responses.filter((r) => r.status === 402);
    expect(served.length).toBe(N);
    expect(refused.length).toBe(3 * N);
    for (const r of refused) expect((r.body.error as { code: string }).code).toBe('insufficient_balance');
    const balances = served.map((r) => (r.body.meta as { balance: number }).balance);
    for (const b of balances) expect(b).toBeGreaterThanOrEqual(0);

    expect(await h.balanceNano(accountId)).toBe(0);
    expect(await h.server.store.openHoldsNano(accountId)).toBe(0);
    const report = await h.server.store.ledgerCheck();
    expect(report.problems).toEqual([]);
    expect(report.ok).toBe(true);
  });

  it('with real (smaller) usage, at most N are served, and credits = balance + holds + charges', async () => {
    const N = 10;
    const messages = [{ role: 'user' as const, content: 'Write one short line.' }];
    const provider = h.config.providers['prov-qwen'];
    const perCallBound = callCostBound(provider, planOf(messages, 64), 64);
    const { accountId, key } = await h.newAccount(formatNano(perCallBound * N));
    const responses = await Promise.all(
      Array.from({ length: 4 * N }, () =>
        h.chat({ provider: 'prov-qwen', messages, max_tokens: 64 }, { key }),
      ),
    );
    const statuses = responses.map((r) => r.status);
    expect(statuses.every((s) => s === 200 || s === 402)).toBe(true);
    const served = statuses.filter((s) => s === 200).length;
    expect(served).toBeGreaterThanOrEqual(N);
    const balance = await h.balanceNano(accountId);
    expect(balance).toBeGreaterThanOrEqual(0);
    const rows = await h.server.store.listUsage(accountId, { limit: 1000 });
    expect(rows.filter((r) => r.status === 'ok').length).toBe(served);
    expect((await h.server.store.ledgerCheck()).ok).toBe(true);
  });
});
