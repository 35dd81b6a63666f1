import { randomFillSync } from 'node:crypto';

/**
 * Random bytes for ids on the request path (completion, hold and ledger ids), from the same CSPRNG as
 * `randomBytes` but drawn from a 4 KiB buffer refilled in one call: a `randomBytes(12)` per id costs a
 * native call and a Buffer allocation each time, which showed as 4% of a request's CPU (docs/performance.md).
 * Not for secrets (API keys, passwords, session ids): those use `randomBytes` directly.
 */
const POOL_SIZE = 4096;
const pool = Buffer.allocUnsafe(POOL_SIZE);
let offset = POOL_SIZE;

function take(n: number): number {
  if (n > POOL_SIZE) throw new RangeError('at most 4096 random bytes at once');
  if (offset + n > POOL_SIZE) {
    randomFillSync(pool);
    offset = 0;
  }
  const at = offset;
  offset += n;
  return at;
}

/** `bytes` random bytes as lowercase hex. */
export function randomHex(bytes: number): string {
  const at = take(bytes);
  return pool.toString('hex', at, at + bytes);
}

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** A random alphanumeric string (rejection sampling keeps it uniform). */
export function randomAlnum(length: number): string {
  let out = '';
  while (out.length < length) {
    const want = (length - out.length) * 2;
    const at = take(want);
    for (let i = at; i < at + want && out.length < length; i++) {
      const byte = pool[i] as number;
      if (byte < 248) out += ALPHABET[byte % 62];
    }
  }
  return out;
}
