import type { SharedAttemptStore } from '../cluster/shared-attempts.js';
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
 * Login and sign-up throttling, per account and per client address. An email is counted the same way
 * whether or not an account has it, so the throttle tells nothing about which emails exist. Once a limit
 * is reached, even the right password is refused until the window ends: guessing cannot go on behind it.
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

  /** Whether a login for `email` from `ip` may be tried now. */
  async checkLogin(email: string, ip: string): Promise<AttemptCheck> {
    const byIp = this.ips.check(ip);
    if (!byIp.ok) return byIp;
    const byAccount = this.accounts.check(email);
    if (!byAccount.ok) return byAccount;
    if (!this.shared) return ALLOWED;
    const sharedByIp = await this.shared.check('login-ip', ip, IP_FAILURES);
    if (sharedByIp && !sharedByIp.ok) return sharedByIp;
    return (await this.shared.check('login-account', email, ACCOUNT_FAILURES)) ?? ALLOWED;
  }

  async loginFailed(email: string, ip: string): Promise<void> {
    this.accounts.hit(email);
    this.ips.hit(ip);
    if (this.shared) {
      await Promise.all([
        this.shared.hit('login-account', email, WINDOW_MS),
        this.shared.hit('login-ip', ip, WINDOW_MS),
      ]);
    }
  }

  async loginSucceeded(email: string): Promise<void> {
    this.accounts.reset(email);
    await this.shared?.reset('login-account', email);
  }

  /** Counts a sign-up attempt from `ip`; refuses once the address made too many. */
  async signupAttempt(ip: string): Promise<AttemptCheck> {
    const local = this.signups.check(ip);
    if (!local.ok) return local;
    this.signups.hit(ip);
    return (await this.shared?.take('signup-ip', ip, IP_SIGNUPS, WINDOW_MS)) ?? ALLOWED;
  }
}
