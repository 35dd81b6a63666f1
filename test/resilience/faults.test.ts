import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Harness, hello, startHarness } from '../helpers/harness.js';

// Fault injection through the whole stack: status, error code, provider served, exact balance.
let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    env: {
      PROV_MISTRAL_TIMEOUT_MS: '400',
      PROV_KIMI_TIMEOUT_MS: '400',
      // The reference for the hang below: the same fault, a timeout long enough to end well after 400 ms.
      PROV_GEMINI_TIMEOUT_MS: '3000',
      CIRCUIT_MIN_REQUESTS: '50', // the failure-rate breaker is tested on its own below
    },
  });
});
afterAll(async () => {
  await h.close();
});
beforeEach(() => {
  h.sim.reset();
});

type Body = {
  error?: { code: string; type: string; message: string };
  meta?: { provider: string; cost: { input: number; output: number; total: number } };
};

const nano = (usd: number) => Math.round(usd * 1e9);
const charged = (body: Body) => nano(body.meta?.cost.input ?? 0) + nano(body.meta?.cost.output ?? 0);

describe('an explicitly chosen provider that misbehaves: mapped error, no charge, no swap', () => {
  it.each([
    [{ kind: 'hang' }, 504, 'provider_timeout'],
    [{ kind: 'reset' }, 502, 'provider_error'],
    [{ kind: 'status', status: 500 }, 502, 'provider_error'],
    [{ kind: 'status', status: 503 }, 502, 'provider_error'],
    [{ kind: 'garbage' }, 502, 'provider_error'],
    [{ kind: 'null' }, 502, 'provider_error'],
    [{ kind: 'no_choices' }, 502, 'provider_error'],
    [{ kind: 'usage', promptTokens: 10, completionTokens: 1_000_000_000 }, 502, 'provider_error'],
    [{ kind: 'usage', promptTokens: -5, completionTokens: 5 }, 502, 'provider_error'],
    [{ kind: 'status', status: 401 }, 502, 'provider_error'],
    [{ kind: 'status', status: 400, message: 'context too long' }, 400, 'upstream_rejected'],
  ] as const)('%j → %i %s', async (fault, status, code) => {
    h.sim.setFault('mistral', fault);
    const before = await h.balanceNano();
    const others = h.sim.requests('llama').length;
    // A hanging upstream is cut at the provider's timeout. Against a reference sent just before, hanging on
    // a provider with a timeout 7.5 times as long: this call ends first, an order the two timeouts set
    // however busy the machine is, where a bound in milliseconds would be the machine's.
    const ended: string[] = [];
    if (fault.kind === 'hang') h.sim.setFault('gemini', fault);
    const reference =
      fault.kind === 'hang'
        ? h.chat({ provider: 'prov-gemini', ...hello, max_tokens: 50 }).finally(() => ended.push('reference'))
        : undefined;
    const res = await h.chat({ provider: 'prov-mistral', ...hello, max_tokens: 50 });
    ended.push('call');
    if (reference) {
      const ref = await reference;
      expect((ref.body as Body).error?.code).toBe('provider_timeout');
      expect(ended).toEqual(['call', 'reference']);
    }
    expect(res.status).toBe(status);
    expect((res.body as Body).error?.code).toBe(code);
    expect(await h.balanceNano()).toBe(before);
    expect(await h.server.store.openHoldsNano(h.accountId)).toBe(0);
    expect(h.sim.requests('llama').length).toBe(others);
    const retryable = status >= 500 && !(fault.kind === 'status' && fault.status === 401);
    expect(res.headers['x-should-retry']).toBe(String(retryable));
  });

  it('429 with Retry-After → 503 provider_unavailable carrying it; the provider then rests that long', async () => {
    h.sim.setFault('llama', { kind: 'status', status: 429, retryAfter: 7, times: 1 });
    const res = await h.chat({ provider: 'prov-llama', ...hello });
    expect(res.status).toBe(503);
    expect((res.body as Body).error?.code).toBe('provider_unavailable');
    expect(Number(res.headers['retry-after'])).toBe(7);
    const calls = h.sim.requests('llama').length;
    const again = await h.chat({ provider: 'prov-llama', ...hello });
    expect(again.status).toBe(503);
    expect(Number(again.headers['retry-after'])).toBeGreaterThanOrEqual(6);
    expect(h.sim.requests('llama').length).toBe(calls); // shed without calling the upstream, no hold
  });
});

describe('auto routing fails over, charges once, names the provider that served', () => {
  it.each([
    [{ kind: 'hang' }],
    [{ kind: 'reset' }],
    [{ kind: 'status', status: 500 }],
    [{ kind: 'garbage' }],
    [{ kind: 'null' }],
    [{ kind: 'usage', promptTokens: 10, completionTokens: 999_999_999 }],
  ] as const)('kimi answering %j: every auto request is served by another provider', async (fault) => {
    h.sim.setFault('kimi', fault);
    let balance = await h.balanceNano();
    const kimiBefore = h.sim.requests('kimi').length;
    for (let i = 0; i < 4; i++) {
      const res = await h.chat({ ...hello, max_tokens: 50 });
      expect(res.status).toBe(200);
      const body = res.body as Body;
      expect(body.meta?.provider).not.toBe('prov-kimi');
      balance -= charged(body);
      expect(await h.balanceNano()).toBe(balance);
    }
    // Rotation starts at kimi once in four requests; it was tried and failed over from.
    expect(h.sim.requests('kimi').length).toBe(kimiBefore + 1);
    expect(await h.server.store.openHoldsNano(h.accountId)).toBe(0);
  });

  it('a 429 with Retry-After takes the provider out of the rotation for that long', async () => {
    h.sim.setFault('qwen', { kind: 'status', status: 429, retryAfter: 30 });
    const before = h.sim.requests('qwen').length;
    for (let i = 0; i < 8; i++) {
      const res = await h.chat(hello);
      expect(res.status).toBe(200);
      expect((res.body as Body).meta?.provider).not.toBe('prov-qwen');
    }
    expect(h.sim.requests('qwen').length - before).toBeLessThanOrEqual(1);
  });

  it('when every candidate fails the last error is returned and nothing is charged', async () => {
    for (const slug of ['deepseek', 'qwen', 'kimi', 'gpt-oss-120b'])
      h.sim.setFault(slug, { kind: 'status', status: 502 });
    const before = await h.balanceNano();
    const res = await h.chat(hello);
    expect(res.status).toBe(502);
    expect((res.body as Body).error?.code).toBe('provider_error');
    expect(await h.balanceNano()).toBe(before);
    const tried = ['deepseek', 'qwen', 'kimi', 'gpt-oss-120b'].filter((s) => h.sim.requests(s).length > 0);
    expect(tried.length).toBe(3); // the first candidate and at most 2 more
  });
});

describe('circuit breaker', () => {
  let b: Harness;
  beforeAll(async () => {
    b = await startHarness({
      env: { CIRCUIT_MIN_REQUESTS: '4', CIRCUIT_FAILURE_PERCENT: '50', CIRCUIT_COOLDOWN_MS: '300' },
    });
  });
  afterAll(async () => {
    await b.close();
  });

  it('opens on the failure rate, sheds explicit requests fast with no hold, probes after the cool-down', async () => {
    b.sim.setFault('claude', { kind: 'status', status: 500 });
    for (let i = 0; i < 4; i++)
      expect((await b.chat({ provider: 'prov-claude', ...hello })).status).toBe(502);
    const calls = b.sim.requests('claude').length;
    const shed = await b.chat({ provider: 'prov-claude', ...hello });
    expect(shed.status).toBe(503);
    expect((shed.body as Body).error?.code).toBe('provider_unavailable');
    expect(b.sim.requests('claude').length).toBe(calls);
    const ready = await b.server.app.inject({ method: 'GET', url: '/readyz' });
    expect(JSON.parse(ready.body).circuits).toEqual([
      expect.objectContaining({ provider: 'prov-claude', circuit: 'open' }),
    ]);

    b.sim.setFault('claude', null);
    await new Promise((r) => setTimeout(r, 350));
    const probe = await b.chat({ provider: 'prov-claude', ...hello });
    expect(probe.status).toBe(200);
    expect((await b.chat({ provider: 'prov-claude', ...hello })).status).toBe(200);
    expect(b.server.registry.health.circuit('prov-claude')).toBe('closed');
  });

  it('an open auto provider is skipped, the rest keep serving', async () => {
    b.sim.setFault('deepseek', { kind: 'status', status: 500 });
    for (let i = 0; i < 4; i++) await b.chat({ provider: 'prov-deepseek', ...hello });
    expect(b.server.registry.health.circuit('prov-deepseek')).toBe('open');
    const before = b.sim.requests('deepseek').length;
    for (let i = 0; i < 6; i++) {
      const res = await b.chat(hello);
      expect(res.status).toBe(200);
      expect((res.body as Body).meta?.provider).not.toBe('prov-deepseek');
    }
    expect(b.sim.requests('deepseek').length).toBe(before);
  });
});

describe('an upstream reporting more usage than the hold covered', () => {
  it('is billed as far as hold + balance go; the response reports what was deducted, the usage row the shortfall', async () => {
    // Found by the ledger property test: prompt bound 25 tokens ("a" + 8 + 16), cap lowered to 16. The
    // hold prices the prompt at Claude's dearest prompt price, its cache write (1.25 × $3 per 1M).
    const held = 25 * 3750 + 16 * 15_000;
    const account = await h.newAccount(String(held / 1e9));
    h.sim.setFault('claude', { kind: 'usage', promptTokens: 40, completionTokens: 16 });
    const res = await h.chat(
      { provider: 'prov-claude', messages: [{ role: 'user', content: 'a' }] },
      { key: account.key },
    );
    expect(res.status).toBe(200);
    const body = res.body as Body & { usage: { cost: number } };
    expect(nano(body.meta?.cost.total ?? 0)).toBe(held);
    expect(body.meta?.cost.total).toBe((body.meta?.cost.input ?? 0) + (body.meta?.cost.output ?? 0));
    expect(body.usage.cost).toBe(held / 1e9);
    expect(await h.balanceNano(account.accountId)).toBe(0);
    const [row] = await h.server.store.listUsage(account.accountId, { limit: 1 });
    expect(row?.inputCostNano).toBe(40 * 3000);
    expect(row?.outputCostNano).toBe(16 * 15_000);
    // The money is consistent, and the unbilled rest is reported by the ledger check.
    const report = await h.server.store.ledgerCheck();
    expect(report.ok).toBe(false);
    expect(report.shortfalls).toEqual([
      expect.objectContaining({
        accountId: account.accountId,
        requests: 1,
        shortfallNano: 40 * 3000 + 16 * 15_000 - held,
      }),
    ]);
    expect((await h.server.store.ledgerCheck({ shortfallAllowanceNano: 1_000_000 })).ok).toBe(true);
  });
});
