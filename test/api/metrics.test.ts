import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/index.js';
import type { ProviderName } from '../../src/providers/types.js';
import { type Harness, hello, startHarness } from '../helpers/harness.js';

const TOKEN = 'metrics-test-token-5f2c9a7e41';
const AUTO: readonly ProviderName[] = ['prov-deepseek', 'prov-qwen', 'prov-kimi', 'prov-gpt-oss-120b'];

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the Prometheus text exposition format (samples only; # lines are returned apart). */
function parseExposition(text: string): { samples: Sample[]; types: Map<string, string> } {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) {
      types.set(type[1] as string, type[2] as string);
      continue;
    }
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`unparsable exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[l[1] as string] = (l[2] as string).replace(/\\(.)/g, '$1');
    }
    const raw = m[3] as string;
    const value = /^nan$/i.test(raw) ? Number.NaN : raw === '+Inf' ? Infinity : Number(raw);
    samples.push({ name: m[1] as string, labels, value });
  }
  return { samples, types };
}

function select(samples: Sample[], name: string, labels: Record<string, string> = {}): Sample[] {
  return samples.filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
}

function sum(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  return select(samples, name, labels).reduce((acc, s) => acc + s.value, 0);
}

/** Scrapes with the test token, another Authorization header, or none (`null`). */
async function scrape(h: Harness, authorization: string | null = `Bearer ${TOKEN}`) {
  const res = await h.server.app.inject({
    method: 'GET',
    url: '/metrics',
    headers: authorization === null ? {} : { authorization },
  });
  return res;
}

async function samplesOf(h: Harness): Promise<Sample[]> {
  const res = await scrape(h);
  expect(res.statusCode).toBe(200);
  return parseExposition(res.body).samples;
}

interface Sent {
  provider: string;
  status: number;
  code: string;
}

describe('GET /metrics after a known mix of traffic', () => {
  let h: Harness;
  const sent: Sent[] = [];
  /** 200 answers that were charged (not idempotent replays). */
  const charged: { provider: string; prompt: number; completion: number; cost: number }[] = [];
  /** Upstream attempts that failed, as `provider outcome`. */
  const failedAttempts: string[] = [];

  async function chat(
    body: unknown,
    expectedStatus: number,
    provider: string | undefined,
    key?: string | null,
  ) {
    const res = await h.chat(body, key === undefined ? {} : { key });
    expect(res.status, JSON.stringify(res.body)).toBe(expectedStatus);
    if (res.status === 200) {
      const meta = res.body.meta as { provider: string; cost: { total: number } };
      const usage = res.body.usage as { prompt_tokens: number; completion_tokens: number };
      sent.push({ provider: meta.provider, status: 200, code: 'ok' });
      if (res.headers['idempotent-replayed'] !== 'true') {
        charged.push({
          provider: meta.provider,
          prompt: usage.prompt_tokens,
          completion: usage.completion_tokens,
          cost: meta.cost.total,
        });
      }
    } else {
      const error = (res.body as { error: { code: string } }).error;
      sent.push({ provider: provider ?? 'none', status: res.status, code: error.code });
    }
    return res;
  }

  beforeAll(async () => {
    h = await startHarness({ env: { METRICS_TOKEN: TOKEN } });

    // 200s on several providers and all three wire formats, explicit and auto-routed.
    await chat({ ...hello, provider: 'prov-qwen' }, 200, undefined);
    await chat(
      { messages: [{ role: 'user', content: 'A second, longer question.' }], provider: 'prov-qwen' },
      200,
      undefined,
    );
    await chat({ ...hello, provider: 'prov-claude' }, 200, undefined);
    // A shortfall: the upstream reports more usage than the hold covered and the balance cannot pay all
    // of it. The hold prices the prompt's 25-token bound at Claude's dearest prompt price, the cache
    // write's $3.75/M, and 16 completion tokens at $15/M: $0.00033375. The response, and so the counters,
    // carry what was deducted ($0.00033375), not the full cost (40 × $3/M + 16 × $15/M = $0.00036).
    const short = await h.newAccount('0.00033375');
    h.sim.setFault('claude', { kind: 'usage', promptTokens: 40, completionTokens: 16, times: 1 });
    const shortfall = await chat(
      { provider: 'prov-claude', messages: [{ role: 'user', content: 'a' }] },
      200,
      undefined,
      short.key,
    );
    expect(Math.round((shortfall.body.meta as { cost: { total: number } }).cost.total * 1e9)).toBe(333_750);
    await chat({ ...hello, model: h.config.providers['prov-gemini'].model }, 200, undefined);
    const first = await chat({ ...hello, model: 'auto' }, 200, undefined);
    await chat({ ...hello, model: 'auto', max_tokens: 5 }, 200, undefined);

    // An idempotent replay: answered 200 again, but not charged (and not counted as tokens or cost).
    const idem = { headers: { 'idempotency-key': 'metrics-replay-1' } };
    const original = await h.chat({ ...hello, provider: 'prov-deepseek' }, idem);
    const replay = await h.chat({ ...hello, provider: 'prov-deepseek' }, idem);
    expect([original.status, replay.status, replay.headers['idempotent-replayed']]).toEqual([
      200,
      200,
      'true',
    ]);
    for (const res of [original, replay]) {
      const meta = res.body.meta as { provider: string; cost: { total: number } };
      const usage = res.body.usage as { prompt_tokens: number; completion_tokens: number };
      sent.push({ provider: meta.provider, status: 200, code: 'ok' });
      if (res === original) {
        charged.push({
          provider: meta.provider,
          prompt: usage.prompt_tokens,
          completion: usage.completion_tokens,
          cost: meta.cost.total,
        });
      }
    }

    // Refusals before routing: no provider.
    await chat(hello, 401, undefined, null);
    await chat({ messages: [] }, 400, undefined);
    await chat({ ...hello, model: 'no-such-model' }, 404, undefined);
    // A 402 is refused after routing: it names the provider it would have used.
    const poor = await h.newAccount('0');
    await chat({ ...hello, provider: 'prov-mistral' }, 402, 'prov-mistral', poor.key);

    // An upstream fault on an explicitly chosen provider: 502, no failover.
    h.sim.setFault('kimi', { kind: 'status', status: 500, times: 1 });
    await chat({ ...hello, provider: 'prov-kimi' }, 502, 'prov-kimi');
    failedAttempts.push('prov-kimi server_error');

    // Failover: auto rotation is round-robin over the auto list, so the next auto request starts at the
    // provider after the one that served `first`; that one fails once, the next one serves.
    const firstIndex = AUTO.indexOf((first.body.meta as { provider: ProviderName }).provider);
    const failing = AUTO[(firstIndex + 2) % AUTO.length] as ProviderName;
    const failingSlug = h.slug(failing);
    const before = h.sim.requests(failingSlug).length;
    h.sim.setFault(failingSlug, { kind: 'status', status: 503, times: 1 });
    const failedOver = await chat({ ...hello, model: 'auto' }, 200, undefined);
    expect(h.sim.requests(failingSlug).length, 'the faulted provider was tried first').toBe(before + 1);
    expect((failedOver.body.meta as { provider: string }).provider).not.toBe(failing);
    h.sim.setFault(failingSlug, null);
    failedAttempts.push(`${failing} server_error`);

    // An upstream 429 with Retry-After opens prov-llama's circuit at once.
    h.sim.setFault('llama', { kind: 'status', status: 429, retryAfter: 120, times: 1 });
    await chat({ ...hello, provider: 'prov-llama' }, 503, 'prov-llama');
    failedAttempts.push('prov-llama rate_limited');
  });

  afterAll(async () => {
    await h.close();
  });

  it('serves the Prometheus text format with the registry content type and process metrics', async () => {
    const res = await scrape(h);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    const { samples, types } = parseExposition(res.body);
    expect(types.get('tollgate_requests_total')).toBe('counter');
    expect(types.get('tollgate_request_duration_seconds')).toBe('histogram');
    expect(types.get('tollgate_upstream_duration_seconds')).toBe('histogram');
    expect(types.get('tollgate_cost_usd_total')).toBe('counter');
    expect(types.get('tollgate_holds_open')).toBe('gauge');
    expect(select(samples, 'process_cpu_user_seconds_total')).toHaveLength(1);
    expect(select(samples, 'nodejs_heap_size_used_bytes')).toHaveLength(1);
    const buckets = select(samples, 'tollgate_request_duration_seconds_bucket').map((s) => s.labels.le);
    expect(buckets).toContain('0.005');
    expect(buckets).toContain('120');
  });

  it('counts every chat request by provider, status and code', async () => {
    const samples = await samplesOf(h);
    const expected = new Map<string, number>();
    for (const s of sent) {
      const key = `${s.provider} ${s.status} ${s.code}`;
      expected.set(key, (expected.get(key) ?? 0) + 1);
    }
    const actual = new Map<string, number>();
    for (const s of select(samples, 'tollgate_requests_total')) {
      actual.set(`${s.labels.provider} ${s.labels.status} ${s.labels.code}`, s.value);
    }
    expect(Object.fromEntries(actual)).toEqual(Object.fromEntries(expected));
    // The mix really covers what it claims to.
    expect(actual.get('none 401 missing_api_key')).toBe(1);
    expect(actual.get('none 400 invalid_messages')).toBe(1);
    expect(actual.get('none 404 model_not_found')).toBe(1);
    expect(actual.get('prov-mistral 402 insufficient_balance')).toBe(1);
    expect(actual.get('prov-kimi 502 provider_error')).toBe(1);
    expect(actual.get('prov-llama 503 provider_unavailable')).toBe(1);
    expect(actual.get('prov-qwen 200 ok')).toBeGreaterThanOrEqual(2);

    // One duration observation per request, under the same provider label.
    expect(sum(samples, 'tollgate_request_duration_seconds_count')).toBe(sent.length);
    for (const provider of new Set(sent.map((s) => s.provider))) {
      expect(sum(samples, 'tollgate_request_duration_seconds_count', { provider })).toBe(
        sent.filter((s) => s.provider === provider).length,
      );
    }
    const slowest = select(samples, 'tollgate_request_duration_seconds_bucket', { le: '+Inf' });
    expect(slowest.reduce((a, s) => a + s.value, 0)).toBe(sent.length);
  });

  it('counts each upstream attempt, failover attempts included, with its outcome', async () => {
    const samples = await samplesOf(h);
    // Every request the simulator received is one attempt, whatever its outcome.
    for (const provider of h.server.registry.all().map((s) => s.provider.name)) {
      expect(sum(samples, 'tollgate_upstream_duration_seconds_count', { provider }), provider).toBe(
        h.sim.requests(h.slug(provider)).length,
      );
    }
    const failures = new Map<string, number>();
    for (const s of select(samples, 'tollgate_upstream_duration_seconds_count')) {
      if (s.labels.outcome !== 'ok') failures.set(`${s.labels.provider} ${s.labels.outcome}`, s.value);
    }
    const expected = new Map<string, number>();
    for (const f of failedAttempts) expected.set(f, (expected.get(f) ?? 0) + 1);
    expect(Object.fromEntries(failures)).toEqual(Object.fromEntries(expected));
    // Successful attempts = charged 200s (the replay made no upstream call).
    expect(sum(samples, 'tollgate_upstream_duration_seconds_count', { outcome: 'ok' })).toBe(charged.length);
  });

  it('counts the tokens and the money charged, exactly as the responses reported them', async () => {
    const samples = await samplesOf(h);
    const providers = new Set(charged.map((c) => c.provider));
    expect(providers.size).toBeGreaterThanOrEqual(4);
    for (const provider of providers) {
      const mine = charged.filter((c) => c.provider === provider);
      expect(sum(samples, 'tollgate_tokens_total', { provider, kind: 'prompt' }), provider).toBe(
        mine.reduce((a, c) => a + c.prompt, 0),
      );
      expect(sum(samples, 'tollgate_tokens_total', { provider, kind: 'completion' }), provider).toBe(
        mine.reduce((a, c) => a + c.completion, 0),
      );
      const cost = sum(samples, 'tollgate_cost_usd_total', { provider });
      expect(Math.abs(cost - mine.reduce((a, c) => a + c.cost, 0)), provider).toBeLessThan(1e-12);
    }
    expect(sum(samples, 'tollgate_tokens_total', { kind: 'prompt' })).toBe(
      charged.reduce((a, c) => a + c.prompt, 0),
    );
    const totalCost = charged.reduce((a, c) => a + c.cost, 0);
    expect(totalCost).toBeGreaterThan(0);
    expect(Math.abs(sum(samples, 'tollgate_cost_usd_total') - totalCost)).toBeLessThan(1e-12);
    // Providers that only failed were never charged.
    expect(select(samples, 'tollgate_cost_usd_total', { provider: 'prov-llama' })).toEqual([]);
    expect(select(samples, 'tollgate_tokens_total', { provider: 'prov-mistral' })).toEqual([]);
  });

  it('shows the circuit forced open, and which providers are active', async () => {
    const samples = await samplesOf(h);
    const state = (provider: string) => select(samples, 'tollgate_circuit_state', { provider })[0]?.value;
    const active = (provider: string) => select(samples, 'tollgate_provider_active', { provider })[0]?.value;
    expect(state('prov-llama')).toBe(2);
    expect(active('prov-llama')).toBe(0);
    for (const provider of ['prov-qwen', 'prov-claude', 'prov-gemini', 'prov-kimi', 'prov-mistral']) {
      expect(state(provider), provider).toBe(0);
      expect(active(provider), provider).toBe(1);
    }
    expect(select(samples, 'tollgate_circuit_state')).toHaveLength(8);
    expect(sum(samples, 'tollgate_circuit_transitions_total', { provider: 'prov-llama', to: 'open' })).toBe(
      1,
    );
    expect(sum(samples, 'tollgate_circuit_transitions_total')).toBe(1);
  });

  it('reports holds and requests in flight while a call is being served', async () => {
    let samples = await samplesOf(h);
    expect(sum(samples, 'tollgate_holds_open')).toBe(0);
    expect(sum(samples, 'tollgate_inflight_requests')).toBe(0);

    h.sim.setFault('mistral', { kind: 'slow', delayMs: 1500, times: 1 });
    const before = h.sim.requests('mistral').length;
    const pending = h.chat({ ...hello, provider: 'prov-mistral' });
    // The upstream call has started, so the hold is placed.
    while (h.sim.requests('mistral').length === before) await new Promise((r) => setTimeout(r, 10));
    samples = await samplesOf(h);
    expect(sum(samples, 'tollgate_holds_open')).toBe(1);
    expect(sum(samples, 'tollgate_holds_open_usd')).toBeGreaterThan(0);
    expect(sum(samples, 'tollgate_inflight_requests')).toBe(1);

    const res = await pending;
    expect(res.status).toBe(200);
    samples = await samplesOf(h);
    expect(sum(samples, 'tollgate_holds_open')).toBe(0);
    expect(sum(samples, 'tollgate_holds_open_usd')).toBe(0);
    expect(sum(samples, 'tollgate_inflight_requests')).toBe(0);
  });

  it('refuses a scrape without the token, or with a wrong one, in the error shape', async () => {
    const missing = await scrape(h, null);
    expect(missing.statusCode).toBe(401);
    expect(missing.json()).toEqual({
      error: { message: expect.any(String), type: 'authentication_error', code: 'missing_api_key' },
    });
    expect(missing.headers['x-should-retry']).toBe('false');

    for (const authorization of [`Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, 'Bearer short', TOKEN]) {
      const wrong = await scrape(h, authorization);
      expect(wrong.statusCode, authorization).toBe(401);
      const body = wrong.json() as { error: { code: string; type: string } };
      expect(body.error.type).toBe('authentication_error');
      expect(['invalid_api_key', 'missing_api_key']).toContain(body.error.code);
      expect(wrong.body).not.toContain(TOKEN);
    }
    const wrong = await scrape(h, `Bearer ${TOKEN}x`);
    expect((wrong.json() as { error: { code: string } }).error.code).toBe('invalid_api_key');

    const ok = await scrape(h, `bearer ${TOKEN}`);
    expect(ok.statusCode).toBe(200);
    expect(ok.body).toContain('tollgate_requests_total');
  });
});

describe('metrics configuration', () => {
  it('is open without METRICS_TOKEN, and each server has its own registry', async () => {
    const a = await startHarness();
    const b = await startHarness();
    try {
      expect((await a.chat({ ...hello, provider: 'prov-qwen' })).status).toBe(200);
      const resA = await a.server.app.inject({ method: 'GET', url: '/metrics' });
      const resB = await b.server.app.inject({ method: 'GET', url: '/metrics' });
      expect([resA.statusCode, resB.statusCode]).toEqual([200, 200]);
      const samplesA = parseExposition(resA.body).samples;
      const samplesB = parseExposition(resB.body).samples;
      expect(sum(samplesA, 'tollgate_requests_total', { provider: 'prov-qwen', code: 'ok' })).toBe(1);
      expect(select(samplesB, 'tollgate_requests_total')).toEqual([]);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('validates METRICS_TOKEN and METRICS_ENABLED without echoing a rejected token', () => {
    expect(loadConfig({}).metricsEnabled).toBe(true);
    expect(loadConfig({}).metricsToken).toBeUndefined();
    expect(loadConfig({ METRICS_TOKEN: TOKEN }).metricsToken).toBe(TOKEN);
    for (const bad of ['short-secret', 'has a space in the middle of it', 'non-ascii-token-ééééééé']) {
      let err: unknown;
      try {
        loadConfig({ METRICS_TOKEN: bad });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      const problems = (err as ConfigError).problems;
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(/^METRICS_TOKEN: must be 16 to 512 printable ASCII characters/);
      expect(problems[0]).not.toContain(bad);
    }
    expect(() => loadConfig({ METRICS_ENABLED: 'sometimes' })).toThrow(
      /METRICS_ENABLED: must be true or false/,
    );
  });

  it('METRICS_ENABLED=false: /metrics answers 404 in the error shape', async () => {
    const h = await startHarness({ env: { METRICS_ENABLED: 'false' } });
    try {
      expect((await h.chat(hello)).status).toBe(200);
      const res = await h.server.app.inject({ method: 'GET', url: '/metrics' });
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({
        error: {
          type: 'invalid_request_error',
          code: 'not_found',
          message: expect.stringContaining('METRICS_ENABLED'),
        },
      });
    } finally {
      await h.close();
    }
  });
});
