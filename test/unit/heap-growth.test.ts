import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  DYNAMIC_FOR_MS,
  governHeapGrowth,
  type HeapGrowthMode,
  HeapGrowthPolicy,
  MAX_MARK_COMPACT_SHARE,
  operatorSetGrowth,
  SHARE_WINDOW,
} from '../../src/runtime/heap-growth.js';

const ROOT = join(import.meta.dirname, '..', '..');
const TUNING = join(ROOT, 'dist', 'runtime', 'v8-tuning.js');
const GROWTH = join(ROOT, 'dist', 'runtime', 'heap-growth.js');

function policy(): {
  policy: HeapGrowthPolicy;
  applied: HeapGrowthMode[];
  timers: { fn: () => void; ms: number }[];
} {
  const applied: HeapGrowthMode[] = [];
  const timers: { fn: () => void; ms: number }[] = [];
  const p = new HeapGrowthPolicy(
    (mode) => applied.push(mode),
    (fn, ms) => timers.push({ fn, ms }),
  );
  p.start();
  return { policy: p, applied, timers };
}

/**
 * The growing factor of each old-generation limit V8 set, from `--trace-gc-verbose`: Node 20 and 22 print
 * it after the limit (`Limit: old size: … KB, new limit: … KB (1.3)`); Node 24's V8 prints only its
 * `factor 1.3 based on …` line before the limit.
 */
function limitFactors(trace: string): number[] {
  const factors: number[] = [];
  let announced: number | undefined;
  const lines =
    /\[HeapController\] (?:factor ([\d.]+) based on|Limit: old size: \d+ KB, new limit: \d+ KB(?: \(([\d.]+)\))?)/g;
  for (const [, factor, applied] of trace.matchAll(lines)) {
    if (factor !== undefined) announced = Number(factor);
    else if (applied !== undefined) factors.push(Number(applied));
    else if (announced !== undefined) factors.push(announced);
  }
  return factors;
}

/**
 * A child node process under `--trace-gc-verbose`: tuned as bin/tollgate (`fixed`), also governed as a
 * server (`governed`), or neither (`v8`). It keeps ~20 MB of small objects at once, as a start-up does,
 * then allocates 16 KiB arrays (60,000 of them, ~1 GB; governed, also 100,000 after the hand-back) that each
 * live for the next 2,000 (32 MB), so that they outlive two scavenges and die in the old generation, as the
 * text of large prompts held by calls in flight does. Returns the growing factor V8 printed for each
 * old-generation limit it set, and the modes the governor went through.
 */
function factors(mode: 'v8' | 'fixed' | 'governed'): { factors: number[]; modes: string[] } {
  const script = `
    const { tuneV8 } = await import(${JSON.stringify(TUNING)});
    const { governHeapGrowth } = await import(${JSON.stringify(GROWTH)});
    ${mode === 'v8' ? '' : 'tuneV8([]);'}
    const modes = [];
    ${mode === 'governed' ? 'governHeapGrowth((m) => modes.push(m), []);' : ''}
    const keep = [];
    for (let i = 0; i < 300_000; i++) keep.push({ i, s: 'k' + i, a: [i, i + 1] });
    const ring = new Array(2_000);
    // 60,000 arrays; governed, also 100,000 more once the factor was handed back (400,000 at most), so that
    // V8 sets limits of its own after the hand-back however early or late it came.
    let handedBackAt = -1;
    for (let i = 0; i < 400_000; i++) {
      if (handedBackAt < 0 && modes.includes('dynamic')) handedBackAt = i;
      if (i >= 60_000 && (handedBackAt < 0 ? ${mode !== 'governed'} : i >= handedBackAt + 100_000)) break;
      ring[i % ring.length] = new Array(2_048).fill(i);
      if (i % 64 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    process.stderr.write(JSON.stringify({ modes, kept: keep.length, ring: ring.length }));
  `;
  const child = spawnSync(process.execPath, ['--trace-gc-verbose', '--input-type=module', '-e', script], {
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  expect(child.status, child.stderr).toBe(0);
  return { factors: limitFactors(child.stdout), modes: JSON.parse(child.stderr).modes };
}

describe('heap growth governor (src/runtime/heap-growth.ts)', () => {
  it('fixes the factor while mark-compacts take a small share of the time, and hands it to V8 for a while when not', () => {
    const { policy: p, applied, timers } = policy();
    expect(applied).toEqual(['fixed']);
    // Small calls: one every 10 s, 20 ms each (0.2%); then a burst, one every 1.2 s at 30 ms (2.5%).
    for (let at = 0; at <= 100_000; at += 10_000) p.onMarkCompact(at, 20);
    for (let at = 101_200; at <= 110_000; at += 1_200) p.onMarkCompact(at, 30);
    expect(p.mode).toBe('fixed');
    expect(applied).toEqual(['fixed']);
    // Large prompts: one every 200 ms at 12 ms (6%). The share counts the last SHARE_WINDOW intervals, so
    // the switch comes at the first mark-compact that makes all of them short enough.
    let at = 120_000;
    const next = () => {
      at += 200;
      return at;
    };
    let switchedAfter = 0;
    while (p.mode === 'fixed') {
      p.onMarkCompact(next(), 12);
      switchedAfter += 1;
    }
    expect(switchedAfter).toBe(SHARE_WINDOW + 1);
    expect(applied).toEqual(['fixed', 'dynamic']);
    expect(timers.map((t) => t.ms)).toEqual([DYNAMIC_FOR_MS]);
    // V8 keeps its factor until the timer, however often mark-compacts come meanwhile.
    for (let i = 0; i < 50; i++) p.onMarkCompact(next(), 12);
    expect(applied).toEqual(['fixed', 'dynamic']);
    timers[0]?.fn();
    expect(p.mode).toBe('fixed');
    expect(applied).toEqual(['fixed', 'dynamic', 'fixed']);
    // The window starts over: SHARE_WINDOW + 1 more mark-compacts are needed before the next switch.
    for (let i = 0; i < SHARE_WINDOW; i++) p.onMarkCompact(next(), 12);
    expect(p.mode).toBe('fixed');
    p.onMarkCompact(next(), 12);
    expect(p.mode).toBe('dynamic');
  });

  it('measures the share against the bound', () => {
    // Five intervals of 1,000 ms; pauses summing to just under and just over 3% of the 5,000 ms span.
    const under = policy();
    for (let i = 0; i <= SHARE_WINDOW; i++) under.policy.onMarkCompact(i * 1_000, i === 0 ? 0 : 29.9);
    expect(under.policy.mode).toBe('fixed');
    const over = policy();
    for (let i = 0; i <= SHARE_WINDOW; i++) over.policy.onMarkCompact(i * 1_000, i === 0 ? 0 : 30.5);
    expect(over.policy.mode).toBe('dynamic');
    expect(MAX_MARK_COMPACT_SHARE).toBe(0.03);
  });

  it('leaves the factor alone when node was given it', () => {
    expect(operatorSetGrowth(['--heap-growing-percent=50'])).toBe(true);
    expect(operatorSetGrowth(['--heap_growing_percent=0'])).toBe(true);
    expect(operatorSetGrowth([])).toBe(false);
    expect(operatorSetGrowth(['--max-semi-space-size=8', '--heap-growing'])).toBe(false);
    const changes: string[] = [];
    expect(governHeapGrowth((mode) => changes.push(mode), ['--heap-growing-percent=0'])).toBe(false);
    expect(changes).toEqual([]);
  });

  it('makes V8 grow the heap by 1.3 from the start, and by its own factor once mark-compacts take too long', () => {
    // Runs the built modules, as bin/tollgate does (`npm test` builds first).
    expect(existsSync(GROWTH), `${GROWTH} is missing: run \`npm run build\``).toBe(true);
    const v8 = factors('v8');
    // The premise: left alone, V8 picks other factors for this load (4 after the fast start).
    expect(v8.factors.length).toBeGreaterThanOrEqual(2);
    expect(v8.factors.some((f) => f !== 1.3)).toBe(true);
    // Tuned as bin/tollgate is: every limit V8 set used the fixed factor, start-up's included.
    const fixed = factors('fixed');
    expect(fixed.factors.length).toBeGreaterThanOrEqual(3);
    expect(new Set(fixed.factors)).toEqual(new Set([1.3]));
    // Governed as a server is: the large strings' mark-compacts came close together, the governor handed the
    // factor back, and V8 set limits with its own factor after that.
    const governed = factors('governed');
    expect(governed.modes).toEqual(['fixed', 'dynamic']);
    expect(governed.factors[0]).toBe(1.3);
    expect(governed.factors.some((f) => f !== 1.3)).toBe(true);
  });
});
