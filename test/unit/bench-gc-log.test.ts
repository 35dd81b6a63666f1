import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { gcByPhase, parseGcTrace, parsePhases, phaseName } from '../../bench/profile/gc-log.js';

const PRELOAD = pathToFileURL(join(import.meta.dirname, '..', '..', 'bench', 'profile', 'gc-trace.mjs')).href;

/**
 * Lines as V8 writes them under --trace-gc-nvp (shortened: V8 writes ~60 fields per line); the last as
 * Node 24's V8 writes its prefix.
 */
const OUTPUT = [
  'gc-trace origin 1700000000000.5',
  '{"url":"http://127.0.0.1:4000"}',
  '[123:0x55d0c8a0]      100 ms: pause=1.2 mutator=50.0 gc=s reduce_memory=0 allocated=13000000 promoted=40000 new_space_survived=20000',
  '[123:0x55d0c8a0]     2500 ms: pause=7.5 mutator=900.0 gc=mc reduce_memory=0 allocated=500000 promoted=100000',
  '[123:0x55d0c8a0:0]     3000 ms: pause=0.8 mutator=400.0 gc=s allocated=14000000 promoted=1200000',
].join('\n');

describe('bench:profile --mode gc reads V8 garbage collection trace', () => {
  it('parses each collection, stamped from the process time origin', () => {
    expect(parseGcTrace(OUTPUT)).toEqual([
      { at: 1700000000100.5, kind: 's', pauseMs: 1.2, allocated: 13000000, promoted: 40000 },
      { at: 1700000002500.5, kind: 'mc', pauseMs: 7.5, allocated: 500000, promoted: 100000 },
      { at: 1700000003000.5, kind: 's', pauseMs: 0.8, allocated: 14000000, promoted: 1200000 },
    ]);
  });

  it('refuses output without the origin line of the preload', () => {
    expect(() => parseGcTrace(OUTPUT.split('\n').slice(1).join('\n'))).toThrow(/gc-trace origin/);
  });

  it('sums the collections that started inside each phase', () => {
    const events = parseGcTrace(OUTPUT);
    const [first, second] = gcByPhase(events, [
      { name: 'c50', start: 1700000000000, end: 1700000002600, requests: 1000 },
      { name: 'idle', start: 1700000002600, end: 1700000004000, requests: 0 },
    ]);
    expect(first).toMatchObject({
      name: 'c50',
      seconds: 2.6,
      scavenges: 1,
      markCompacts: 1,
      allocatedMb: 13.5,
      promotedMb: 0.14,
      promotedPerRequest: 140,
      maxScavengeMs: 1.2,
      maxMarkCompactMs: 7.5,
    });
    expect(second).toMatchObject({
      scavenges: 1,
      markCompacts: 0,
      promotedMb: 1.2,
      promotedPerRequest: undefined,
      maxMarkCompactMs: 0,
    });
  });

  it('reads what a real process under the preload writes', () => {
    // Enough short-lived garbage for several scavenges, and some of it kept (promoted).
    const script =
      'const keep = []; for (let i = 0; i < 3e5; i++) { const o = { i, s: "x" + i }; if (i % 10 === 0) keep.push(o); }';
    const out = execFileSync(process.execPath, ['--import', PRELOAD, '-e', script], { encoding: 'utf8' });
    const events = parseGcTrace(out);
    const scavenges = events.filter((e) => e.kind === 's');
    expect(scavenges.length).toBeGreaterThan(0);
    expect(scavenges.every((e) => e.allocated > 0 && e.pauseMs >= 0)).toBe(true);
    expect(events.reduce((sum, e) => sum + e.promoted, 0)).toBeGreaterThan(0);
  });
});

describe('bench:profile --mode gc --phases', () => {
  it('reads closed-loop, open-loop, half-maximum and idle phases', () => {
    expect(parsePhases('c50:10, idle:3,200:20,half:20')).toEqual([
      { kind: 'closed', connections: 50, seconds: 10 },
      { kind: 'idle', seconds: 3 },
      { kind: 'open', rate: 200, seconds: 20 },
      { kind: 'open', rate: 'half', seconds: 20 },
    ]);
  });

  it('names the phases as the report prints them', () => {
    const [closed, idle, open, half] = parsePhases('c50:10,idle:3,200:20,half:20');
    expect([closed, idle, open].map((p) => phaseName(p as never))).toEqual(['c50', 'idle', '200/s']);
    expect(phaseName(half as never, 4700)).toBe('half (4700/s)');
  });

  it.each([
    ['c50', /not <load>:<seconds>/],
    ['c50:0', /not <load>:<seconds>/],
    ['fast:10', /the load is/],
    ['200:10:3', /not <load>:<seconds>/],
    ['half:10', /closed-loop phase before it/],
  ])('refuses %s', (spec, message) => {
    expect(() => parsePhases(spec)).toThrow(message);
  });
});
