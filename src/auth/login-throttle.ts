import { type AttemptCheck, AttemptLimiter } from './attempt-limiter.js';

/** Failed logins one account (by email, known or not) may have in `WINDOW_MS`. */
export const ACCOUNT_FAILURES = 5;
/** Failed logins one client address may have in `WINDOW_MS`, over every email it tries. */
export const IP_FAILURES = 20;
/** Sign-up attempts one client address may make in `WINDOW_MS`. */
export const IP_SIGNUPS = 10;
export const WINDOW_MS = 15 * 60_000;

/**
 * Login and sign-up throttling, per account and per client address, in this process's memory (one
 * process; several instances each count their own). An email is counted the same way whether or not an
 * account has it, so the throttle tells nothing about which emails exist. Once a limit is reached, even
 * the right password is refused until the window ends: guessing cannot go on behind it.
 */
export class LoginThrottle {
  private readonly accounts: AttemptLimiter;
  private readonly ips: AttemptLimiter;
  private readonly signups: AttemptLimiter;

  constructor(now: () => number = Date.now) {
    this.accounts = new AttemptLimiter(ACCOUNT_FAILURES, WINDOW_MS, now);
    this.ips = new AttemptLimiter(IP_FAILURES, WINDOW_MS, now);
    this.signups = new AttemptLimiter(IP_SIGNUPS, WINDOW_MS, now);
  }

  /** Whether a login for `email` from `ip` may be tried now. */
  checkLogin(email: string, ip: string): AttemptCheck {
    const byIp = this.ips.check(ip);
    if (!byIp.ok) return byIp;
    return this.accounts.check(email);
  }

  loginFailed(email: string, ip: string): void {
    this.accounts.hit(email);
    this.ips.hit(ip);
  }

  loginSucceeded(email: string): void {
    this.accounts.reset(email);
  }

  /** Counts a sign-up attempt from `ip`; refuses once the address made too many. */
  signupAttempt(ip: string): AttemptCheck {
    const check = this.signups.check(ip);
    if (check.ok) this.signups.hit(ip);
    return check;
  }
}
