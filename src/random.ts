import { randomFillSync } from 'node:crypto';

/**
 * Random bytes for ids on the request path (completion and hold ids), from the same CSPRNG as
 * `randomBytes` but drawn from a 4 KiB buffer refilled in one call: a `randomBytes(12)` per id costs a
 * native call and a Buffer allocation each time, a visible share of a request's CPU.
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

const ALPHABET = Buffer.from('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789', 'latin1');
/** Where `randomAlnum` assembles its characters: one string made at the end, not one per character added. */
const letters = Buffer.allocUnsafe(POOL_SIZE / 2);

/** A random alphanumeric string (rejection sampling keeps it uniform); at most 2,048 characters. */
export function randomAlnum(length: number): string {
  if (length > letters.length) throw new RangeError('at most 2048 random characters at once');
  let n = 0;
  while (n < length) {
    const want = (length - n) * 2;
    const at = take(want);
    for (let i = at; i < at + want && n < length; i++) {
      const byte = pool[i] as number;
      if (byte < 248) letters[n++] = ALPHABET[byte % 62] as number;
    }
  }
  return letters.toString('latin1', 0, length);
}

/**
 * A random id whose first characters are the current time (milliseconds, fixed width), so ids created
 * one after another sort one after another. As a primary key or unique index entry, each new one lands on
 * the rightmost leaf of the B-tree, the page the previous insert already touched: a group commit writes
 * a handful of pages instead of one random leaf per index per request (docs/performance.md, "One usage
 * index per account, and rows that append"). The rest is
 * random: hex `randomBytes` bytes after 12 hex digits of time, or alphanumerics after 8 of time.
 */
export function timeOrderedHex(randomBytes: number): string {
  return timeHex.of(Date.now()) + randomHex(randomBytes);
}

/** `length` alphanumerics: 8 of them the time in base 62 (sortable as ASCII), the rest random. */
export function timeOrderedAlnum(length: number): string {
  return time62.of(Date.now()) + randomAlnum(length - 8);
}

/**
 * A time's text, made once per millisecond: encoding a 41-bit time digit by digit runs on floating-point
 * division and `fmod` for every id of a call, and the calls of one millisecond share it.
 */
export class PerMillisecond {
  private at = -1;
  private text = '';
  constructor(private readonly encode: (ms: number) => string) {}

  of(ms: number): string {
    if (ms !== this.at) {
      this.at = ms;
      this.text = this.encode(ms);
    }
    return this.text;
  }
}

/**
 * `ms.toString(radix)` with `ms` split in two parts below 2^31 first: V8 writes a small integer's digits
 * directly, but a larger number's with floating-point `fmod` per digit, far slower.
 */
export function timeToString(ms: number, radix: 16 | 36): string {
  const unit = radix === 16 ? 0x1000000 : 1_679_616; // 16^6, 36^4
  const high = Math.floor(ms / unit);
  const low = (ms - high * unit).toString(radix).padStart(radix === 16 ? 6 : 4, '0');
  return high === 0 ? low.replace(/^0+(?=.)/, '') : high.toString(radix) + low;
}

const timeHex = new PerMillisecond((ms) => timeToString(ms, 16).padStart(12, '0'));
const time62 = new PerMillisecond((ms) => {
  let t = ms;
  let text = '';
  for (let i = 0; i < 8; i++) {
    text = SORTABLE_62[t % 62] + text;
    t = Math.floor(t / 62);
  }
  return text;
});

/** Base-62 digits in ASCII order, so the encoded times compare like the numbers. */
const SORTABLE_62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
