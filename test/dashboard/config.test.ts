import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/index.js';

function problems(env: Record<string, string>): readonly string[] {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe('dashboard configuration', () => {
  it('defaults: invite-only sign-up, no proxy trusted, 2 h idle and 24 h absolute sessions', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      signup: 'invite',
      trustProxy: false,
      publicUrl: undefined,
      sessionIdleTimeoutMs: 7_200_000,
      sessionMaxAgeMs: 86_400_000,
    });
  });

  it('reads SIGNUP, TRUST_PROXY, PUBLIC_URL and the session lifetimes', () => {
    const config = loadConfig({
      SIGNUP: 'Closed',
      TRUST_PROXY: 'true',
      PUBLIC_URL: 'https://LLM.example.com/',
      SESSION_IDLE_TIMEOUT_MS: '600000',
      SESSION_MAX_AGE_MS: '3600000',
    });
    expect(config).toMatchObject({
      signup: 'closed',
      trustProxy: true,
      publicUrl: 'https://llm.example.com',
      sessionIdleTimeoutMs: 600_000,
      sessionMaxAgeMs: 3_600_000,
    });
  });

  it('names each bad value', () => {
    const found = problems({
      SIGNUP: 'sometimes',
      TRUST_PROXY: 'maybe',
      PUBLIC_URL: 'https://llm.example.com/dashboard',
      SESSION_IDLE_TIMEOUT_MS: '5',
    });
    expect(found.map((p) => p.split(':')[0])).toEqual([
      'SIGNUP',
      'TRUST_PROXY',
      'PUBLIC_URL',
      'SESSION_IDLE_TIMEOUT_MS',
    ]);
    expect(problems({ PUBLIC_URL: 'ftp://files.example.com' })[0]).toMatch(
      /^PUBLIC_URL: must be an http\(s\) origin/,
    );
    expect(problems({ SESSION_IDLE_TIMEOUT_MS: '7200000', SESSION_MAX_AGE_MS: '3600000' })).toEqual([
      'SESSION_IDLE_TIMEOUT_MS: must not be longer than SESSION_MAX_AGE_MS',
    ]);
  });
});
