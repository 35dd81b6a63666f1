import { setImmediate as tick } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { AttemptCheck } from '../../src/auth/attempt-limiter.js';
import {
  ACCOUNT_FAILURES,
  IP_FAILURES,
  IP_SIGNUPS,
  LoginThrottle,
  type LoginVerdict,
  type SharedAttemptStore,
  WINDOW_MS,
} from '../../src/auth/login-throttle.js';

/**
 * Redis's windows as the instances see them, in memory: each call is atomic (as a script is in Redis)
 * and answers on a later turn of the event loop (as a network round trip does), so concurrent callers
 * interleave. `down` makes every call go unanswered.
 */
class FakeShared implements SharedAttemptStore {
  readonly counts = new Map<string, number>();
  down = false;

  async take(kind: string, value: string, max: number, _windowMs: number): Promise<AttemptCheck | undefined> {
    await tick();
    if (this.down) return undefined;
    const key = `${kind}:${value}`;
    const n = this.counts.get(key) ?? 0;
    if (n >= max) return { ok: false, retryAfterMs: WINDOW_MS };
    this.counts.set(key, n + 1);
    return { ok: true };
  }
  async undo(kind: string, value: string): Promise<void> {
    await tick();
    if (this.down) return;
    const key = `${kind}:${value}`;
    const n = this.counts.get(key) ?? 0;
    if (n > 0) this.counts.set(key, n - 1);
  }
  async reset(kind: string, value: string): Promise<void> {
    await tick();
    if (!this.down) this.counts.delete(`${kind}:${value}`);
  }
}

/** A password check that takes a few turns of the event loop, like Argon2 on the thread pool. */
function checker(right: string) {
  const calls = { n: 0 };
  const verify = (password: string) => async (): Promise<true | false> => {
    calls.n += 1;
    for (let i = 0; i < 5; i++) await tick();
    return password === right;
  };
  return { calls, verify };
}

const wrong = () => async (): Promise<false> => false;

function shuffled<T>(items: T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

/** 399 wrong passwords and the right one, in random order but never among the first allowed ones. */
function burst(right: string): string[] {
  const wrongs = Array.from({ length: 399 }, (_, i) => `wrong guess ${i}`);
  const at = ACCOUNT_FAILURES + Math.floor(Math.random() * (400 - ACCOUNT_FAILURES));
  const order = shuffled(wrongs);
  order.splice(at, 0, right);
  return order;
}

const outcomes = (verdicts: LoginVerdict<unknown>[]) =>
  verdicts.reduce<Record<string, number>>((acc, v) => {
    acc[v.outcome] = (acc[v.outcome] ?? 0) + 1;
    return acc;
  }, {});

describe('login throttle under concurrency', () => {
  it(`400 attempts at once for one email: ${ACCOUNT_FAILURES} verified, the right one refused until the window ends`, async () => {
    let now = 1_000_000;
    const throttle = new LoginThrottle(() => now);
    const { calls, verify } = checker('the right password');
    const passwords = burst('the right password');
    const verdicts = await Promise.all(
      passwords.map((p) => throttle.attemptLogin('u@example.test', '198.51.100.1', verify(p))),
    );
    expect(calls.n).toBe(ACCOUNT_FAILURES);
    expect(outcomes(verdicts)).toEqual({ wrong: ACCOUNT_FAILURES, throttled: 400 - ACCOUNT_FAILURES });
    expect(verdicts[passwords.indexOf('the right password')]?.outcome).toBe('throttled');

    now += WINDOW_MS - 1;
    expect(
      (await throttle.attemptLogin('u@example.test', '198.51.100.2', verify('the right password'))).outcome,
    ).toBe('throttled');
    now += 1;
    expect(
      (await throttle.attemptLogin('u@example.test', '198.51.100.2', verify('the right password'))).outcome,
    ).toBe('right');
    expect(calls.n).toBe(ACCOUNT_FAILURES + 1);
  });

  it(`400 attempts at once from one address over many emails: ${IP_FAILURES} verified`, async () => {
    const throttle = new LoginThrottle(() => 0);
    const { calls, verify } = checker('never');
    const verdicts = await Promise.all(
      Array.from({ length: 400 }, (_, i) =>
        throttle.attemptLogin(`spray-${i}@example.test`, '198.51.100.7', verify('guess')),
      ),
    );
    expect(calls.n).toBe(IP_FAILURES);
    expect(outcomes(verdicts)).toEqual({ wrong: IP_FAILURES, throttled: 400 - IP_FAILURES });
    // The refused attempts added nothing to the emails' windows.
    expect(
      (await throttle.attemptLogin('spray-399@example.test', '198.51.100.8', verify('guess'))).outcome,
    ).toBe('wrong');
  });

  it(`two instances sharing Redis: ${ACCOUNT_FAILURES} verified in all, and both refuse afterwards`, async () => {
    let now = 1_000_000;
    const shared = new FakeShared();
    const a = new LoginThrottle(() => now, shared);
    const b = new LoginThrottle(() => now, shared);
    const { calls, verify } = checker('the right password');
    const verdicts = await Promise.all(
      burst('the right password').map((p, i) =>
        (i % 2 === 0 ? a : b).attemptLogin('u@example.test', '198.51.100.1', verify(p)),
      ),
    );
    expect(calls.n).toBe(ACCOUNT_FAILURES);
    expect(outcomes(verdicts)).toEqual({ wrong: ACCOUNT_FAILURES, throttled: 400 - ACCOUNT_FAILURES });
    for (const instance of [a, b]) {
      const late = await instance.attemptLogin(
        'u@example.test',
        '198.51.100.3',
        verify('the right password'),
      );
      expect(late.outcome).toBe('throttled');
    }
    // The window ends in both places: this process's clock, and Redis's expiry.
    now += WINDOW_MS;
    shared.counts.clear();
    expect(
      (await b.attemptLogin('u@example.test', '198.51.100.3', verify('the right password'))).outcome,
    ).toBe('right');
  });

  it('sign-ups at once from one address: the limit holds, alone and across instances', async () => {
    const alone = new LoginThrottle(() => 0);
    const local = await Promise.all(Array.from({ length: 100 }, () => alone.signupAttempt('192.0.2.9')));
    expect(local.filter((c) => c.ok)).toHaveLength(IP_SIGNUPS);

    const shared = new FakeShared();
    const a = new LoginThrottle(() => 0, shared);
    const b = new LoginThrottle(() => 0, shared);
    const both = await Promise.all(
      Array.from({ length: 100 }, (_, i) => (i % 2 ? a : b).signupAttempt('192.0.2.10')),
    );
    expect(both.filter((c) => c.ok)).toHaveLength(IP_SIGNUPS);
  });
});

describe('login throttle bookkeeping', () => {
  it('a right password takes its attempt back and clears the email; an error takes it back', async () => {
    const throttle = new LoginThrottle(() => 0);
    for (let i = 0; i < ACCOUNT_FAILURES - 1; i++)
      await throttle.attemptLogin('w@example.test', `198.51.100.${i}`, wrong());
    expect((await throttle.attemptLogin('w@example.test', '198.51.100.50', async () => 'ok')).outcome).toBe(
      'right',
    );
    // Five fresh failures fit again.
    for (let i = 0; i < ACCOUNT_FAILURES; i++)
      expect((await throttle.attemptLogin('w@example.test', `198.51.100.${i}`, wrong())).outcome).toBe(
        'wrong',
      );
    expect((await throttle.attemptLogin('w@example.test', '198.51.100.51', wrong())).outcome).toBe(
      'throttled',
    );

    // No verdict (the database failed): not a failure.
    const failing = async (): Promise<false> => {
      throw new Error('database away');
    };
    for (let i = 0; i < ACCOUNT_FAILURES * 2; i++)
      await expect(throttle.attemptLogin('x@example.test', '198.51.100.60', failing)).rejects.toThrow();
    expect((await throttle.attemptLogin('x@example.test', '198.51.100.60', wrong())).outcome).toBe('wrong');
  });
});

describe('login throttle shared by instances', () => {
  it('failures spread over two instances lock the account on both; a success on one clears it', async () => {
    const shared = new FakeShared();
    const a = new LoginThrottle(Date.now, shared);
    const b = new LoginThrottle(Date.now, shared);
    for (let i = 0; i < ACCOUNT_FAILURES; i++) {
      const instance = i % 2 === 0 ? a : b;
      expect((await instance.attemptLogin('u@example.test', `198.51.100.${i}`, wrong())).outcome).toBe(
        'wrong',
      );
    }
    // Neither instance alone has seen five failures; together they have.
    for (const instance of [a, b]) {
      const verdict = await instance.attemptLogin('u@example.test', '198.51.100.99', async () => 'ok');
      expect(verdict.outcome).toBe('throttled');
    }
    expect((await a.attemptLogin('other@example.test', '198.51.100.99', wrong())).outcome).toBe('wrong');
    // The refusals were not counted: the address has one failure (other@), in Redis too.
    expect(shared.counts.get('login-ip:198.51.100.99')).toBe(1);
  });

  it('a success on one instance clears the email for both', async () => {
    const shared = new FakeShared();
    const a = new LoginThrottle(Date.now, shared);
    const b = new LoginThrottle(Date.now, shared);
    for (let i = 0; i < ACCOUNT_FAILURES - 1; i++)
      await (i % 2 ? a : b).attemptLogin('s@example.test', '198.51.100.1', wrong());
    expect((await a.attemptLogin('s@example.test', '198.51.100.1', async () => 'ok')).outcome).toBe('right');
    expect(shared.counts.get('login-account:s@example.test')).toBeUndefined();
    expect(shared.counts.get('login-ip:198.51.100.1')).toBe(ACCOUNT_FAILURES - 1);
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
    for (let i = 0; i < ACCOUNT_FAILURES; i++)
      await a.attemptLogin('v@example.test', '198.51.100.1', wrong());
    expect((await a.attemptLogin('v@example.test', '198.51.100.2', wrong())).outcome).toBe('throttled');
    // And an instance's own refusal stands even when Redis lost the window (a restart).
    shared.down = false;
    expect((await a.attemptLogin('v@example.test', '198.51.100.2', wrong())).outcome).toBe('throttled');
  });
});
