import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { GatewayError } from '../../src/errors.js';
import { ProviderHealthTracker } from '../../src/routing/health.js';
import { ProviderRegistry } from '../../src/routing/registry.js';
import { resolveRoute } from '../../src/routing/resolve-route.js';
import { LocalRotationCounter } from '../../src/routing/rotation.js';

function registry(env: Record<string, string>, now = () => 0) {
  const config = loadConfig({
    PROV_DEEPSEEK_API_KEY: 'k',
    PROV_QWEN_API_KEY: 'k',
    PROV_KIMI_API_KEY: 'k',
    PROV_GPT_OSS_120B_API_KEY: 'k',
    PROV_CLAUDE_API_KEY: 'k',
    ...env,
  });
  return new ProviderRegistry(
    config,
    new ProviderHealthTracker({ windowMs: 10_000, minRequests: 2, failureRate: 0.5, coolDownMs: 1000 }, now),
  );
}

/** The code of the refusal, whether thrown at once (a named provider) or as a rejection (auto routing). */
async function codeOf(fn: () => unknown): Promise<string | undefined> {
  try {
    await fn();
  } catch (e) {
    return e instanceof GatewayError ? e.code : 'other';
  }
  return undefined;
}

describe('resolveRoute', () => {
  it('rotates over the active auto providers with the next ones as failover candidates', async () => {
    const reg = registry({});
    const rot = new LocalRotationCounter();
    const first = await resolveRoute({ model: undefined, provider: undefined }, reg, rot);
    expect(first.explicit).toBe(false);
    expect(first.candidates.map((c) => c.name)).toEqual(['prov-deepseek', 'prov-qwen', 'prov-kimi']);
    const seq: (string | undefined)[] = [];
    for (let i = 0; i < 5; i++) {
      seq.push((await resolveRoute({ model: 'auto', provider: undefined }, reg, rot)).candidates[0]?.name);
    }
    expect(seq).toEqual(['prov-qwen', 'prov-kimi', 'prov-gpt-oss-120b', 'prov-deepseek', 'prov-qwen']);
  });

  it('skips unconfigured, disabled and open-circuit providers', async () => {
    let t = 0;
    const reg = registry({ PROV_QWEN_ENABLED: 'false', PROV_KIMI_API_KEY: '' }, () => t);
    reg.health.recordFailure('prov-gpt-oss-120b');
    reg.health.recordFailure('prov-gpt-oss-120b');
    const rot = new LocalRotationCounter();
    expect(
      (await resolveRoute({ model: undefined, provider: undefined }, reg, rot)).candidates.map((c) => c.name),
    ).toEqual(['prov-deepseek']);
    t = 1000; // cool-down over: half-open, one probe allowed
    expect(reg.isActive('prov-gpt-oss-120b')).toBe(true);
    expect(reg.health.tryAcquire('prov-gpt-oss-120b')).toBe(true);
    expect(reg.health.tryAcquire('prov-gpt-oss-120b')).toBe(false);
    reg.health.recordSuccess('prov-gpt-oss-120b');
    expect(reg.health.circuit('prov-gpt-oss-120b')).toBe('closed');
  });

  it('no active auto provider → 503 no_provider_available', async () => {
    const reg = registry({
      PROV_DEEPSEEK_API_KEY: '',
      PROV_QWEN_API_KEY: '',
      PROV_KIMI_API_KEY: '',
      PROV_GPT_OSS_120B_API_KEY: '',
    });
    expect(
      await codeOf(() =>
        resolveRoute({ model: 'auto', provider: undefined }, reg, new LocalRotationCounter()),
      ),
    ).toBe('no_provider_available');
  });

  it('explicit selection, precedence and errors', async () => {
    const reg = registry({});
    const rot = new LocalRotationCounter();
    const r = (model: string | undefined, provider: string | undefined) =>
      resolveRoute({ model, provider }, reg, rot);
    expect(await r(undefined, 'prov-claude')).toMatchObject({ explicit: true });
    expect((await r(undefined, 'prov-claude')).candidates.map((c) => c.name)).toEqual(['prov-claude']);
    expect((await r('prov-claude', undefined)).candidates[0]?.name).toBe('prov-claude');
    expect((await r('claude-sonnet-4-5', undefined)).candidates[0]?.name).toBe('prov-claude');
    expect((await r('auto', 'prov-claude')).candidates[0]?.name).toBe('prov-claude');
    expect(await codeOf(() => r('prov-qwen', 'prov-claude'))).toBe('model_provider_mismatch');
    expect(await codeOf(() => r(undefined, 'claude'))).toBe('invalid_provider');
    expect(await codeOf(() => r('gpt-4o', undefined))).toBe('model_not_found');
    expect(await codeOf(() => r(undefined, 'prov-gemini'))).toBe('provider_unavailable');
    expect(await codeOf(() => r('prov-gemini', undefined))).toBe('provider_unavailable');
  });
});
