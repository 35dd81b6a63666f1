import { GatewayError } from '../errors.js';
import type { TopUpCodes } from '../store/types.js';
import { AttemptLimiter } from './attempt-limiter.js';
import type { SharedAttemptStore } from './login-throttle.js';
import { hashTopUpCode, normalizeTopUpCode } from './topup-code.js';

/** Failed redemptions one account may have in `CODE_WINDOW_MS`. */
export const CODE_FAILURES_PER_ACCOUNT = 10;
/** Failed redemptions one client address may have in `CODE_WINDOW_MS` (the dashboard's), over every account. */
export const CODE_FAILURES_PER_ADDRESS = 30;
export const CODE_WINDOW_MS = 15 * 60_000;

/** What a redeemed code came to. */
export interface Redeemed {
  amountNano: number;
  balanceNano: number;
  batchId: string;
}

function invalidCode(): GatewayError {
  return new GatewayError('invalid_code', 'This code is unknown, already used or expired.', {
    param: 'code',
  });
}

/**
 * Redeems a code for an account, without a throttle (the CLI's operator): the code is read as
 * `normalizeTopUpCode` reads it and found by its hash; an unknown, used or expired one is `invalid_code`.
 */
export async function redeemTopUpCode(store: TopUpCodes, accountId: string, code: string): Promise<Redeemed> {
  const normalized = normalizeTopUpCode(code);
  if (normalized === undefined) throw invalidCode();
  const result = await store.redeemCode({ codeHash: hashTopUpCode(normalized), accountId });
  if (!result.ok) throw invalidCode();
  return { amountNano: result.amountNano, balanceNano: result.balanceNano, batchId: result.batchId };
}

/** One window an attempt is counted in: this process's, and the instances' shared one under `kind`. */
interface Counter {
  kind: string;
  max: number;
  local: AttemptLimiter;
}

/**
 * Redemptions by users (the API and the dashboard), throttled: failed attempts are counted per account
 * and, from the dashboard, per client address, so that nobody can try codes in bulk. The attempt is counted
 * before the code is looked up and taken back when it was redeemed (or the lookup failed), as the login
 * throttle does (`LoginThrottle`): a burst of guesses at once is admitted no further than the limit. With
 * Redis the windows are shared by the instances (`SharedAttemptStore`), so N instances allow the same
 * guesses as one; while Redis does not answer, each counts its own. Once a window is full even a right
 * code waits until it ends (429 `too_many_attempts`, with Retry-After).
 */
export class CodeRedemption {
  private readonly byAccount: Counter;
  private readonly byAddress: Counter;

  constructor(
    private readonly store: TopUpCodes,
    now: () => number = Date.now,
    private readonly shared?: SharedAttemptStore,
  ) {
    this.byAccount = {
      kind: 'code-account',
      max: CODE_FAILURES_PER_ACCOUNT,
      local: new AttemptLimiter(CODE_FAILURES_PER_ACCOUNT, CODE_WINDOW_MS, now),
    };
    this.byAddress = {
      kind: 'code-ip',
      max: CODE_FAILURES_PER_ADDRESS,
      local: new AttemptLimiter(CODE_FAILURES_PER_ADDRESS, CODE_WINDOW_MS, now),
    };
  }

  /** Redeems `code` for the account; `ip`: the client's address, when it is to be counted too. */
  async redeem(input: { accountId: string; code: string; ip?: string }): Promise<Redeemed> {
    const windows: [Counter, string][] = [[this.byAccount, input.accountId]];
    if (input.ip !== undefined) windows.unshift([this.byAddress, input.ip]);
    const counted = await this.admit(windows);
    let redeemed: Redeemed;
    try {
      redeemed = await redeemTopUpCode(this.store, input.accountId, input.code);
    } catch (err) {
      // A wrong code stays counted; anything else (the database away) was no guess.
      if (!(err instanceof GatewayError && err.code === 'invalid_code')) await this.takeBack(counted);
      throw err;
    }
    await this.takeBack(counted);
    return redeemed;
  }

  /**
   * Counts the attempt in every window, or in none when one of them is full (then throws the 429). This
   * process's windows first, checked and counted with no await in between; then the shared ones.
   */
  private async admit(windows: [Counter, string][]): Promise<Counted[]> {
    const counted: Counted[] = [];
    for (const [counter, value] of windows) {
      const check = counter.local.take(value);
      if (!check.ok) {
        await this.takeBack(counted);
        throw tooManyAttempts(check.retryAfterMs);
      }
      counted.push({ counter, value, shared: false });
    }
    if (!this.shared) return counted;
    for (const entry of [...counted]) {
      const check = await this.shared.take(
        entry.counter.kind,
        entry.value,
        entry.counter.max,
        CODE_WINDOW_MS,
      );
      if (check && !check.ok) {
        await this.takeBack(counted);
        throw tooManyAttempts(check.retryAfterMs);
      }
      entry.shared = check !== undefined;
    }
    return counted;
  }

  private async takeBack(counted: readonly Counted[]): Promise<void> {
    for (const { counter, value } of counted) counter.local.undo(value);
    const shared = this.shared;
    if (!shared) return;
    await Promise.all(counted.filter((c) => c.shared).map((c) => shared.undo(c.counter.kind, c.value)));
  }
}

interface Counted {
  counter: Counter;
  value: string;
  /** Whether the shared window counted it too (to be taken back there). */
  shared: boolean;
}

function tooManyAttempts(retryAfterMs: number): GatewayError {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new GatewayError(
    'too_many_attempts',
    `Too many failed code redemptions. Try again in ${Math.ceil(seconds / 60)} minute${seconds > 60 ? 's' : ''}.`,
    { retryAfterSeconds: seconds },
  );
}
