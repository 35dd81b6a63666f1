import { type AttemptCheck, AttemptLimiter } from './attempt-limiter.js';

/** Failed logins one account (by email, known or not) may have in `WINDOW_MS`. */
export const ACCOUNT_FAILURES = 5;
/** Failed logins one client address may have in `WINDOW_MS`, over every email it tries. */
export const IP_FAILURES = 20;
/** Sign-up attempts one client address may make in `WINDOW_MS`. */
export const IP_SIGNUPS = 10;
export const WINDOW_MS = 15 * 60_000;

const ALLOWED: AttemptCheck = { ok: true };

/**
 * Counters of attempts (failed logins, sign-ups) in fixed windows, shared by the instances: the port the
 * throttle needs, implemented over Redis by `cluster/` (`SharedAttempts`).
 */
export interface SharedAttemptStore {
  /**
   * Counts one event of `value` unless it already has `max` in its window, atomically; undefined when
   * Redis does not answer (then nothing may have been counted).
   */
  take(kind: string, value: string, max: number, windowMs: number): Promise<AttemptCheck | undefined>;
  /** Takes back one event `take` counted (nothing happens when Redis does not answer). */
  undo(kind: string, value: string): Promise<void>;
  /** Forgets `value`'s window. */
  reset(kind: string, value: string): Promise<void>;
}

/** What a throttled password check came to. */
export type LoginVerdict<T> =
  | { outcome: 'right'; value: T }
  | { outcome: 'wrong' }
  | { outcome: 'throttled'; retryAfterMs: number };

/** Which counters one admitted attempt was counted in, so that exactly those are taken back. */
interface Counted {
  email: string;
  ip: string;
  sharedIp: boolean;
  sharedAccount: boolean;
}

/**
 * Login and sign-up throttling, per account and per client address. An email is counted the same way
 * whether or not an account has it, so the throttle tells nothing about which emails exist. Once a limit
 * is reached, even the right password is refused until the window ends: guessing cannot go on behind it.
 *
 * An attempt is counted as a failure *before* its password is verified, in the same step as the check,
 * and taken back when the password was right. Checking first and counting after the verification would
 * let every attempt that arrives while the first ones are being verified pass the check: a burst of
 * hundreds would all be verified against a limit of five.
 *
 * Every attempt is counted in this process's memory and, with Redis (`shared`), in windows every instance
 * shares, so N instances behind a load balancer allow the same number of guesses as one. A refusal by
 * either counts; while Redis does not answer, each instance goes on with its own counts.
 */
export class LoginThrottle {
  private readonly accounts: AttemptLimiter;
  private readonly ips: AttemptLimiter;
  private readonly signups: AttemptLimiter;

  constructor(
    now: () => number = Date.now,
    private readonly shared?: SharedAttemptStore,
  ) {
    this.accounts = new AttemptLimiter(ACCOUNT_FAILURES, WINDOW_MS, now);
    this.ips = new AttemptLimiter(IP_FAILURES, WINDOW_MS, now);
    this.signups = new AttemptLimiter(IP_SIGNUPS, WINDOW_MS, now);
  }

  /**
   * A password check for `email` from `ip` (a login, or the current password on the password form):
   * `verify` runs only when the attempt is admitted, and answers the value to go on with when the
   * password is right, or false. A wrong password stays counted; a right one clears the email's
   * failures; an error in `verify` (no verdict, e.g. the database is away) takes the attempt back.
   */
  async attemptLogin<T>(
    email: string,
    ip: string,
    verify: () => Promise<T | false>,
  ): Promise<LoginVerdict<T>> {
    const admitted = await this.admit(email, ip);
    if (!admitted.ok) return { outcome: 'throttled', retryAfterMs: admitted.retryAfterMs };
    let value: T | false;
    try {
      value = await verify();
    } catch (err) {
      await this.takeBack(admitted.counted);
      throw err;
    }
    if (value === false) return { outcome: 'wrong' };
    await this.succeeded(admitted.counted);
    return { outcome: 'right', value };
  }

  /** Counts a sign-up attempt from `ip`; refuses once the address made too many. */
  async signupAttempt(ip: string): Promise<AttemptCheck> {
    // Checked and counted synchronously: no other request can slip in between.
    const local = this.signups.take(ip);
    if (!local.ok || !this.shared) return local;
    const shared = await this.shared.take('signup-ip', ip, IP_SIGNUPS, WINDOW_MS);
    if (shared && !shared.ok) {
      this.signups.undo(ip);
      return shared;
    }
    return ALLOWED;
  }

  /**
   * Counts the attempt in every window it belongs to, or in none when one of them is full. The address
   * is taken first, so that an address past its limit (spraying many emails) adds nothing to the
   * emails' windows.
   */
  private async admit(
    email: string,
    ip: string,
  ): Promise<{ ok: true; counted: Counted } | { ok: false; retryAfterMs: number }> {
    // This process's windows: checked and counted with no await in between, so a burst of concurrent
    // attempts is admitted one at a time.
    const byIp = this.ips.take(ip);
    if (!byIp.ok) return byIp;
    const byAccount = this.accounts.take(email);
    if (!byAccount.ok) {
      this.ips.undo(ip);
      return byAccount;
    }
    const counted: Counted = { email, ip, sharedIp: false, sharedAccount: false };
    if (!this.shared) return { ok: true, counted };

    // The instances' windows: each take is one atomic script in Redis. Unanswered (Redis away): the
    // local count alone decides.
    const sharedByIp = await this.shared.take('login-ip', ip, IP_FAILURES, WINDOW_MS);
    if (sharedByIp && !sharedByIp.ok) {
      await this.takeBack(counted);
      return sharedByIp;
    }
    counted.sharedIp = sharedByIp !== undefined;
    const sharedByAccount = await this.shared.take('login-account', email, ACCOUNT_FAILURES, WINDOW_MS);
    if (sharedByAccount && !sharedByAccount.ok) {
      await this.takeBack(counted);
      return sharedByAccount;
    }
    counted.sharedAccount = sharedByAccount !== undefined;
    return { ok: true, counted };
  }

  /** The attempt was no failure: it is taken back from the address, and the email starts afresh. */
  private async succeeded(counted: Counted): Promise<void> {
    this.ips.undo(counted.ip);
    this.accounts.reset(counted.email);
    if (!this.shared) return;
    await Promise.all([
      counted.sharedIp ? this.shared.undo('login-ip', counted.ip) : undefined,
      this.shared.reset('login-account', counted.email),
    ]);
  }

  private async takeBack(counted: Counted): Promise<void> {
    this.ips.undo(counted.ip);
    this.accounts.undo(counted.email);
    if (!this.shared) return;
    await Promise.all([
      counted.sharedIp ? this.shared.undo('login-ip', counted.ip) : undefined,
      counted.sharedAccount ? this.shared.undo('login-account', counted.email) : undefined,
    ]);
  }
}
