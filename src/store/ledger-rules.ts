/**
 * The ledger's money rules, as pure functions of an account's figures (integer nanodollars). Every change of
 * a balance follows one of them. The SQLite ledger reads the account's row inside its transaction, applies
 * the rule and writes the result (sqlite/ledger.ts); the PostgreSQL ledger does the same under a row lock,
 * and its single statements (postgres/ledger-sql.ts) are these rules written in SQL, because one statement
 * is what keeps them right while other instances write the same row. The property test
 * test/store/ledger-rule-property.test.ts holds both stores to these functions.
 *
 * The rules take amounts already checked (`invalidHold`, `invalidCost`, `invalidCredit`): whole numbers of
 * nanodollars, 0 or more. Whether the account may spend at all (its status) is the store's check, not theirs.
 */

export interface HoldOutcome {
  /** Whether the balance covered the hold; when not, nothing changes. */
  ok: boolean;
  /** The available balance after it. */
  next: number;
}

/** A hold moves `amount` out of the available balance, or changes nothing when the balance is short. */
export function hold(balance: number, amount: number): HoldOutcome {
  return amount <= balance ? { ok: true, next: balance - amount } : { ok: false, next: balance };
}

export interface SettleOutcome {
  /** What the call was charged: the cost, or less when hold and balance together fall short. */
  charged: number;
  /** cost − charged: service given and not paid for, recorded on the call's usage row. */
  shortfall: number;
  /** The available balance after it. */
  next: number;
}

/**
 * A settle closes the call's hold of `held` (0 when it was closed already, e.g. released by the sweeper)
 * and charges the actual `cost`: from the hold first, then from the available balance as far as it goes,
 * never below zero. The rest of the hold goes back to the balance. What neither covers is the shortfall:
 * the ledger check reports each account's sum of them, and fails past LEDGER_SHORTFALL_ALLOWANCE_USD
 * (`beyondAllowance`).
 */
export function settle(balance: number, held: number, cost: number): SettleOutcome {
  const available = balance + held;
  const charged = Math.min(cost, available);
  return { charged, shortfall: cost - charged, next: available - charged };
}

/** A release gives the whole hold back (nothing when it was closed already: `held` is then 0). */
export function release(balance: number, held: number): number {
  return balance + held;
}

/** A credit adds to the balance, up to the largest amount a JavaScript number keeps exactly. */
export function credit(balance: number, amount: number): number {
  const next = balance + amount;
  if (!Number.isSafeInteger(next)) {
    throw new Error('the balance would exceed the largest amount the store keeps exactly');
  }
  return next;
}

/** Why `amount` cannot be held; undefined when it can. */
export function invalidHold(amount: number): Error | undefined {
  return Number.isSafeInteger(amount) && amount >= 0 ? undefined : new Error('invalid hold amount');
}

/** Why `cost` cannot be charged; undefined when it can. */
export function invalidCost(cost: number): Error | undefined {
  return Number.isSafeInteger(cost) && cost >= 0 ? undefined : new Error('invalid cost');
}

/** Why `amount` cannot be credited; undefined when it can. */
export function invalidCredit(amount: number): Error | undefined {
  return Number.isSafeInteger(amount) && amount > 0
    ? undefined
    : new Error('a credit must be a positive whole number of nanodollars');
}

/**
 * What the ledger says of an account whose money all adds up: every credit is either still available, held
 * for a call in flight, or charged. Returns credits − (balance + open holds + charges): 0 when consistent.
 */
export function discrepancy(figures: {
  creditsNano: number;
  chargesNano: number;
  openHoldsNano: number;
  balanceNano: number;
}): number {
  return figures.creditsNano - (figures.balanceNano + figures.openHoldsNano + figures.chargesNano);
}

/** Whether an account's unbilled service (its shortfalls) fails the ledger check. */
export function beyondAllowance(shortfallNano: number, allowanceNano: number): boolean {
  return shortfallNano > allowanceNano;
}

/** What a call was charged, from its usage row's costs and shortfall. */
export function chargedOf(inputCostNano: number, outputCostNano: number, shortfallNano: number): number {
  return inputCostNano + outputCostNano - shortfallNano;
}
