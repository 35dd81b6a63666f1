import { describe, expect, it } from 'vitest';
import {
  batchProblem,
  generateTopUpCode,
  hashTopUpCode,
  MAX_CODES_PER_BATCH,
  normalizeTopUpCode,
  parseExpiry,
  topUpCodeHint,
} from '../../src/auth/topup-code.js';

describe('top-up codes', () => {
  it('are "tg-" and 26 base32 characters (130 bits), each new one different', () => {
    const codes = Array.from({ length: 2_000 }, generateTopUpCode);
    for (const code of codes) expect(code).toMatch(/^tg-[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(new Set(codes).size).toBe(codes.length);
    // Every character of the alphabet turns up: the bytes are not cut to a smaller alphabet.
    expect(new Set(codes.join('').slice(3)).size).toBeGreaterThanOrEqual(32);
  });

  it('are read as Crockford base32 reads them: case, O/I/L and dashes do not matter', () => {
    const code = generateTopUpCode();
    expect(normalizeTopUpCode(code)).toBe(code);
    expect(normalizeTopUpCode(`  ${code.toLowerCase()} `)).toBe(code);
    expect(normalizeTopUpCode('TG-0000000000000000000000001O')).toBe('tg-00000000000000000000000010');
    expect(normalizeTopUpCode('tg-IIII-LLLL-0000-0000-0000-0000-00')).toBe('tg-11111111000000000000000000');
    expect(hashTopUpCode(normalizeTopUpCode(code.toLowerCase()) as string)).toBe(hashTopUpCode(code));
    for (const bad of [
      '',
      'tg-',
      'sk-svc-00000000000000000000000000000000',
      `${code}0`,
      code.slice(0, -1),
      'tg-UUUUUUUUUUUUUUUUUUUUUUUUUU',
    ]) {
      expect(normalizeTopUpCode(bad), bad).toBeUndefined();
    }
  });

  it('are stored as SHA-256 only, and shown by a hint of their last four characters', () => {
    const code = generateTopUpCode();
    expect(hashTopUpCode(code)).toMatch(/^[0-9a-f]{64}$/);
    expect(topUpCodeHint(code)).toBe(`tg-…${code.slice(-4)}`);
  });

  it('batches need a positive amount, 1 to 1000 codes and an expiry in the future', () => {
    const now = Date.parse('2025-01-01T00:00:00Z');
    const ok = { amountNano: 5_000_000_000, count: 10, expiresAt: null, now };
    expect(batchProblem(ok)).toBeUndefined();
    expect(batchProblem({ ...ok, count: MAX_CODES_PER_BATCH })).toBeUndefined();
    expect(batchProblem({ ...ok, amountNano: undefined })?.param).toBe('amount');
    expect(batchProblem({ ...ok, amountNano: 0 })?.param).toBe('amount');
    expect(batchProblem({ ...ok, count: 0 })?.param).toBe('count');
    expect(batchProblem({ ...ok, count: MAX_CODES_PER_BATCH + 1 })?.param).toBe('count');
    expect(batchProblem({ ...ok, count: 1.5 })?.param).toBe('count');
    expect(batchProblem({ ...ok, expiresAt: now })?.param).toBe('expires');
    expect(batchProblem({ ...ok, expiresAt: Number.NaN })?.param).toBe('expires');
    expect(batchProblem({ ...ok, expiresAt: now + 1 })).toBeUndefined();
  });

  it('expiries are ISO-8601 dates, or times with their zone', () => {
    expect(parseExpiry('2025-01-31')).toBe(Date.parse('2025-01-31T00:00:00Z'));
    expect(parseExpiry('2025-01-31T12:00:00Z')).toBe(Date.parse('2025-01-31T12:00:00Z'));
    expect(parseExpiry('2025-01-31T12:00+02:00')).toBe(Date.parse('2025-01-31T10:00:00Z'));
    for (const bad of ['2025-01-31T12:00:00', 'tomorrow', '1738324800000', '2025-13-01']) {
      expect(parseExpiry(bad), bad).toBeUndefined();
    }
  });
});
