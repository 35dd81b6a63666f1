import { describe, expect, it } from 'vitest';
import { newCompletionId } from '../../src/gateway/ids.js';
import { randomAlnum, randomHex, timeOrderedAlnum, timeOrderedHex, timeToString } from '../../src/random.js';

describe('pooled random ids', () => {
  it('randomHex gives the asked length, across many pool refills, never repeating', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 20_000; i++) {
      const id = randomHex(12); // 240 KB drawn: ~60 refills of the 4 KiB pool
      expect(id).toMatch(/^[0-9a-f]{24}$/);
      seen.add(id);
    }
    expect(seen.size).toBe(20_000);
  });

  it('randomAlnum is alphanumeric and roughly uniform over its 62 symbols', () => {
    const counts = new Map<string, number>();
    const text = Array.from({ length: 2_000 }, () => randomAlnum(31)).join('');
    expect(text).toMatch(/^[A-Za-z0-9]{62000}$/);
    for (const c of text) counts.set(c, (counts.get(c) ?? 0) + 1);
    expect(counts.size).toBe(62);
    // 1,000 expected per symbol; a biased modulo (256 % 62) would push the first 8 symbols ~25% high.
    for (const n of counts.values()) expect(Math.abs(n - 1_000)).toBeLessThan(200);
  });

  it('randomAlnum gives exactly the asked length, up to 2,048 characters, and refuses more', () => {
    for (const length of [0, 1, 21, 2_048])
      expect(randomAlnum(length)).toMatch(new RegExp(`^[A-Za-z0-9]{${length}}$`));
    // Each call is a string of its own, not a view of the buffer the characters are assembled in.
    const first = randomAlnum(40);
    const copy = `${first}`;
    randomAlnum(40);
    expect(first).toBe(copy);
    expect(() => randomAlnum(2_049)).toThrow(RangeError);
  });

  it('completion ids keep OpenAI form', () => {
    expect(newCompletionId()).toMatch(/^chatcmpl-[A-Za-z0-9]{29}$/);
  });
});

describe('time-ordered ids', () => {
  it('sort in creation order across milliseconds and keep their length and alphabet', async () => {
    const hex: string[] = [];
    const alnum: string[] = [];
    for (let i = 0; i < 5; i++) {
      hex.push(timeOrderedHex(6));
      alnum.push(timeOrderedAlnum(29));
      await new Promise((r) => setTimeout(r, 3));
    }
    for (const id of hex) expect(id).toMatch(/^[0-9a-f]{24}$/);
    for (const id of alnum) expect(id).toMatch(/^[A-Za-z0-9]{29}$/);
    expect([...hex].sort()).toEqual(hex);
    expect([...alnum].sort()).toEqual(alnum); // plain string order, as a B-tree on the column sorts
    expect(new Set(alnum.map((a) => a.slice(0, 8))).size).toBe(5);
  });

  it('the time prefix is the clock, so it also orders ids made in different processes', () => {
    const before = Date.now().toString(16).padStart(12, '0');
    const id = timeOrderedHex(6);
    expect(id.slice(0, 12) >= before).toBe(true);
  });
});

describe('timeToString', () => {
  it('writes a time in base 16 and 36 exactly as Number#toString does', () => {
    const samples = [0, 1, 35, 36, 1_679_615, 1_679_616, 0xffffff, 0x1000000, 0x1000001, Date.now()];
    for (let i = 0; i < 5_000; i++) samples.push(Math.floor(Math.random() * 2 ** 48));
    for (const ms of samples) {
      expect(timeToString(ms, 16)).toBe(ms.toString(16));
      expect(timeToString(ms, 36)).toBe(ms.toString(36));
    }
  });
});
