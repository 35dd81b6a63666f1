import { describe, expect, it } from 'vitest';
import type { AttemptCheck } from '../../src/auth/attempt-limiter.js';
import { ACCOUNT_FAILURES, IP_SIGNUPS, LoginThrottle, WINDOW_MS } from '../../src/auth/login-throttle.js';
import type { SharedAttemptStore } from '../../src/cluster/shared-attempts.js';

/** Redis's windows as the instances see them, in memory; `down` makes every call go unanswered. */
class FakeShared implements SharedAttemptStore {
  readonly counts = new Map<string, number>();
  down = false;

  async check(kind: string, value: string, max: number): Promise<AttemptCheck | undefined> {
    if (this.down) return undefined;
    return (this.counts.get(`${kind}:${value}`) ?? 0) >= max
      ? { ok: false, retryAfterMs: WINDOW_MS }
      : { ok: true };
  }
  async hit(kind: string, value: string, _windowMs: number): Promise<void> {
    if (this.down) return;
    const key = `${kind}:${value}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }
  async reset(kind: string, value: string): Promise<void> {
    if (!this.down) this.counts.delete(`${kind}:${value}`);
  }
  async take(kind: string, value: string, max: number, windowMs: number): Promise<AttemptCheck | undefined> {
    const checked = await this.check(kind, value, max);
    if (checked?.ok) await this.hit(kind, value, windowMs);
    return checked;
  }
}

describe('login throttle shared by instances', () => {
  it('failures spread over two instances lock the account on both; a success on one clears it', async () => {
    const shared = new FakeShared();
    const a = new LoginThrottle(Date.now, shared);
    const b = new LoginThrottle(Date.now, shared);
    for (let i = 0; i < ACCOUNT_FAILURES; i++) {
      const instance = i % 2 === 0 ? a : b;
      expect((await instance.checkLogin('u@example.test', `198.51.100.${i}`)).ok).toBe(true);
      await instance.loginFailed('u@example.test', `198.51.100.${i}`);
    }
    // Neither instance alone has seen five failures; together they have.
    for (const instance of [a, b]) {
      const check = await instance.checkLogin('u@example.test', '198.51.100.99');
      expect(check.ok).toBe(false);
    }
    expect((await a.checkLogin('other@example.test', '198.51.100.99')).ok).toBe(true);
    await a.loginSucceeded('u@example.test');
    expect((await b.checkLogin('u@example.test', '198.51.100.99')).ok).toBe(true);
  });

  it('sign-ups from one address are counted across instances', async () => {
    const shared = new FakeShared();
    const a = new LoginThrottle(Date.now, shared);
    const b = new LoginThrottle(Date.now, shared);
    for (let i = 0; i < IP_SIGNUPS; i++)
      expect((await (i % 2 ? a : b).signupAttempt('192.0.2.1')).ok).toBe(true);
    expect((await a.signupAttempt('192.0.2.1')).ok).toBe(false);
    expect((await b.signupAttempt('192.0.2.1')).ok).toBe(false);
  });

  it('while Redis does not answer, each instance still refuses past its own count', async () => {
    const shared = new FakeShared();
    shared.down = true;
    const a = new LoginThrottle(Date.now, shared);
    for (let i = 0; i < ACCOUNT_FAILURES; i++) await a.loginFailed('v@example.test', '198.51.100.1');
    expect((await a.checkLogin('v@example.test', '198.51.100.2')).ok).toBe(false);
    // And an instance's own refusal stands even when Redis lost the window (a restart).
    shared.down = false;
    expect((await a.checkLogin('v@example.test', '198.51.100.2')).ok).toBe(false);
  });
});
