/**
 * Money is integer nanodollars (1 USD = 10^9) everywhere inside Tollgate. Floats appear only at the
 * JSON edge (`nanoToUsd`). Prices are nanodollars per 1,000,000 tokens.
 */

export const NANO_PER_USD = 1_000_000_000;
const NANO_PER_USD_BIG = 1_000_000_000n;
const TOKENS_PER_PRICE_UNIT = 1_000_000n;

/** Largest amount we accept anywhere: keeps every sum far below 2^53. */
export const MAX_NANO = 1_000_000_000 * NANO_PER_USD; // one billion dollars

const DECIMAL_USD = /^(\d{1,12})(?:\.(\d{1,9}))?$/;

/**
 * Parses a non-negative decimal dollar amount with at most 9 decimal places ("12", "0.000000001")
 * exactly into nanodollars. Returns `undefined` for anything else (signs, exponents, >9 decimals).
 */
export function parseUsdToNano(text: string): number | undefined {
  const match = DECIMAL_USD.exec(text.trim());
  if (!match) return undefined;
  const whole = BigInt(match[1] ?? '0');
  const frac = BigInt((match[2] ?? '').padEnd(9, '0'));
  const nano = whole * NANO_PER_USD_BIG + frac;
  if (nano > BigInt(MAX_NANO)) return undefined;
  return Number(nano);
}

/** Nanodollars → dollars as a JavaScript number (the correctly rounded quotient). */
export function nanoToUsd(nano: number): number {
  return nano / NANO_PER_USD;
}

/** Nanodollars → an exact decimal string ("0.000001234"), for CLI output and logs. */
export function formatNano(nano: number): string {
  const negative = nano < 0;
  if (Number.isSafeInteger(nano)) return `${negative ? '-' : ''}${nanoDecimal(Math.abs(nano))}`;
  const abs = BigInt(Math.abs(nano));
  const whole = abs / NANO_PER_USD_BIG;
  const frac = (abs % NANO_PER_USD_BIG).toString().padStart(9, '0').replace(/0+$/, '');
  return `${negative ? '-' : ''}${whole}${frac ? `.${frac}` : ''}`;
}

/**
 * A non-negative safe integer of nanodollars as an exact decimal of dollars, trailing zeros dropped
 * ("0.000001234", "12.5", "0"), in Number arithmetic: below 2^53 the whole dollars are `floor(nano / 10^9)`
 * exactly (the quotient's rounding error, under 2^-30, is less than the 10^-9 that separates it from the
 * next whole number), and the rest is an integer below 10^9. `formatNano` writes amounts with it.
 */
export function nanoDecimal(nano: number): string {
  if (!Number.isSafeInteger(nano) || nano < 0) throw new RangeError(`not a whole amount ≥ 0: ${nano}`);
  const whole = Math.floor(nano / NANO_PER_USD);
  let frac = nano - whole * NANO_PER_USD;
  if (frac === 0) return String(whole);
  let width = 9;
  while (frac % 10 === 0) {
    frac /= 10;
    width--;
  }
  const digits = String(frac);
  return `${whole}.${LEADING_ZEROS.slice(0, width - digits.length)}${digits}`;
}

const LEADING_ZEROS = '00000000';

/** Cost of `tokens` at `pricePerMillionNano`: ceil(tokens × price / 10^6), computed exactly. */
export function tokenCost(tokens: number, pricePerMillionNano: number): number {
  if (!Number.isSafeInteger(tokens) || tokens < 0) throw new RangeError(`bad token count: ${tokens}`);
  if (!Number.isSafeInteger(pricePerMillionNano) || pricePerMillionNano < 0) {
    throw new RangeError(`bad price: ${pricePerMillionNano}`);
  }
  const exact = tokens * pricePerMillionNano;
  // Fast path (every realistic call; BigInt costs several allocations per call on the hot path). For
  // integers a, b with a + b < 2^53, rounding a / b to a double never crosses an integer: a non-integer
  // quotient is at least 1/b from the integers around it, more than half an ulp there ((a + b)/b · 2^-53).
  // So Math.ceil / Math.floor of the double quotient are exact. test/unit/money.test.ts checks against BigInt.
  if (Number.isSafeInteger(exact + 1_000_000)) return Math.ceil(exact / 1_000_000);
  const product = BigInt(tokens) * BigInt(pricePerMillionNano);
  const cost = (product + TOKENS_PER_PRICE_UNIT - 1n) / TOKENS_PER_PRICE_UNIT;
  if (cost > BigInt(Number.MAX_SAFE_INTEGER)) throw new RangeError('cost out of range');
  return Number(cost);
}

/** The largest token count whose cost at `pricePerMillionNano` fits in `budgetNano`. */
export function maxTokensFor(budgetNano: number, pricePerMillionNano: number): number {
  if (budgetNano < 0) return 0;
  // A free side costs nothing at any length, even with nothing left to spend.
  if (pricePerMillionNano === 0) return Number.MAX_SAFE_INTEGER;
  if (budgetNano === 0) return 0;
  // tokens × price ≤ budget × 10^6  ⇔  ceil(tokens × price / 10^6) ≤ budget
  const scaled = budgetNano * 1_000_000;
  // Exact for the same reason as in tokenCost.
  if (Number.isSafeInteger(scaled + pricePerMillionNano)) return Math.floor(scaled / pricePerMillionNano);
  const tokens = (BigInt(budgetNano) * TOKENS_PER_PRICE_UNIT) / BigInt(pricePerMillionNano);
  return tokens > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(tokens);
}
