import { hash, randomBytes } from 'node:crypto';
import type { CodeBatch, TopUpCodes } from '../store/types.js';

/**
 * A top-up code is "tg-" and 26 characters of Crockford's base32 (130 bits from the CSPRNG): guessing one
 * is hopeless, and the attempts are throttled besides (`CodeRedemption`). Only its SHA-256 is stored, as
 * for API keys: a secret this random needs no slow hash. Reading is forgiving as Crockford's alphabet
 * means it to be: case is ignored, and O, I and L are read as 0, 1 and 1.
 */
export const CODE_PREFIX = 'tg-';
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const BODY_LENGTH = 26;
const CODE_PATTERN = /^tg-[0-9A-HJKMNP-TV-Z]{26}$/;

/** The most codes one batch may have. */
export const MAX_CODES_PER_BATCH = 1_000;

/** A new code: each character 5 bits of one random byte (32 divides 256, so every character is uniform). */
export function generateTopUpCode(): string {
  const bytes = randomBytes(BODY_LENGTH);
  let body = '';
  for (const byte of bytes) body += ALPHABET[byte & 31];
  return CODE_PREFIX + body;
}

/** The code as it is hashed — prefix lower-case, body upper-case, O/I/L read as 0/1/1 — or undefined when it cannot be one. */
export function normalizeTopUpCode(text: string): string | undefined {
  const trimmed = text.trim();
  if (trimmed.slice(0, CODE_PREFIX.length).toLowerCase() !== CODE_PREFIX) return undefined;
  const body = trimmed
    .slice(CODE_PREFIX.length)
    .replace(/-/g, '')
    .toUpperCase()
    .replace(/O/g, '0')
    .replace(/[IL]/g, '1');
  const code = CODE_PREFIX + body;
  return CODE_PATTERN.test(code) ? code : undefined;
}

/** SHA-256 (hex) of a normalized code: the only form a code is stored in. */
export function hashTopUpCode(normalized: string): string {
  return hash('sha256', normalized, 'hex');
}

/** Display hint shown in a batch's listing: `tg-…WXYZ` (20 of the code's 130 bits). */
export function topUpCodeHint(code: string): string {
  return `${CODE_PREFIX}…${code.slice(-4)}`;
}

/** A new batch: its codes as made, shown once (only their hashes are kept). */
export interface CreatedBatch {
  batch: CodeBatch;
  codes: string[];
}

/**
 * Why a batch cannot be made (the message, and the field it is about); undefined when it can. The amount
 * is already parsed (nanodollars: `parseUsdToNano`, so at most what a credit grant may be).
 */
export function batchProblem(input: {
  amountNano: number | undefined;
  count: number;
  expiresAt: number | null;
  now: number;
}): { param: 'amount' | 'count' | 'expires'; message: string } | undefined {
  if (input.amountNano === undefined || input.amountNano <= 0) {
    return {
      param: 'amount',
      message: 'the amount must be a positive dollar amount with at most 9 decimal places',
    };
  }
  if (!Number.isInteger(input.count) || input.count < 1 || input.count > MAX_CODES_PER_BATCH) {
    return { param: 'count', message: `the count must be a whole number from 1 to ${MAX_CODES_PER_BATCH}` };
  }
  if (input.expiresAt !== null && (!Number.isSafeInteger(input.expiresAt) || input.expiresAt <= input.now)) {
    return { param: 'expires', message: 'the expiry must be an ISO-8601 time in the future' };
  }
  return undefined;
}

/**
 * An ISO-8601 date or time as epoch ms — `2025-01-31` (its start, UTC) or `2025-01-31T12:00:00Z` (a time
 * needs its zone, `Z` or `+02:00`: the server's own would be a guess) — undefined when it is none.
 */
export function parseExpiry(text: string): number | undefined {
  if (!/^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2}))?$/.test(text.trim())) {
    return undefined;
  }
  const ms = Date.parse(text.trim());
  return Number.isNaN(ms) ? undefined : ms;
}

/** Makes a batch of `count` new codes (checked by `batchProblem` first) and stores their hashes. */
export async function createTopUpBatch(
  store: TopUpCodes,
  input: {
    amountNano: number;
    count: number;
    expiresAt: number | null;
    note: string | null;
    createdBy: string | null;
  },
): Promise<CreatedBatch> {
  const codes = Array.from({ length: input.count }, generateTopUpCode);
  const batch = await store.createCodeBatch({
    amountNano: input.amountNano,
    note: input.note,
    expiresAt: input.expiresAt,
    createdBy: input.createdBy,
    codes: codes.map((code) => ({ hash: hashTopUpCode(code), hint: topUpCodeHint(code) })),
  });
  return { batch, codes };
}
