/**
 * How far V8 lets the old generation grow past its live size before the next full collection (a
 * mark-compact), chosen by load.
 *
 * V8 picks that factor itself at every mark-compact, from 1.1 up to 4, from the collector's speed against
 * the program's rate of allocation at that moment. A server's start-up and every burst of load allocate
 * fast, so a mark-compact that falls there lets the heap grow to up to four times its live size, and
 * resident memory rises for the next minutes and falls again. With small calls the factor V8 settles on
 * under steady load is its minimum, 1.1, so fixing it near that costs nothing; with large prompts, whose
 * text the calls in flight hold long enough for it to be promoted to the old generation, a low factor
 * means a mark-compact every few megabytes, and the CPU per call rises markedly (docs/performance.md,
 * "Memory: V8 flags set by `bin/tollgate`").
 *
 * So the factor is fixed at 1.3 (`--heap-growing-percent=30`, V8's own conservative factor; V8 reads the
 * flag each time it sets a limit; bin/tollgate sets it at start, ./v8-tuning.ts) as long as mark-compacts
 * take a small share of the time, and left to V8 for a minute whenever they take more — which is what
 * fast old-generation allocation, large prompts, makes them do.
 */
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { FIXED_GROWING_PERCENT, flagName } from './v8-tuning.js';

/**
 * The share of time that mark-compact pauses may take under the fixed factor: V8's own target (it sizes
 * the heap for a mutator utilisation of 97%). Above it, V8 gets the factor back.
 */
export const MAX_MARK_COMPACT_SHARE = 0.03;
/** Over how many consecutive intervals between mark-compacts that share is measured. */
export const SHARE_WINDOW = 5;
/** How long V8 keeps its own factor before the fixed one is tried again. */
export const DYNAMIC_FOR_MS = 60_000;

export type HeapGrowthMode = 'fixed' | 'dynamic';

/**
 * The decision alone, fed with each mark-compact's start (ms) and pause; testable without V8.
 *
 * With small calls, mark-compacts stay well under that share, under steady load and in the burst a load
 * starts with; with large prompts and the fixed factor they come far more often and pass it, and with
 * V8's own factor they come an order of magnitude less often.
 */
export class HeapGrowthPolicy {
  mode: HeapGrowthMode = 'fixed';
  /** The last mark-compacts, at most SHARE_WINDOW + 1 of them. */
  private recent: { atMs: number; pauseMs: number }[] = [];

  constructor(
    private readonly apply: (mode: HeapGrowthMode) => void,
    private readonly later: (fn: () => void, ms: number) => void = (fn, ms) => {
      setTimeout(fn, ms).unref();
    },
  ) {}

  /** Sets the fixed factor; the first call of a server. */
  start(): void {
    this.mode = 'fixed';
    this.recent = [];
    this.apply('fixed');
  }

  /** A mark-compact began at `atMs` and paused the thread for `pauseMs`. */
  onMarkCompact(atMs: number, pauseMs: number): void {
    if (this.mode === 'dynamic') return;
    this.recent.push({ atMs, pauseMs });
    if (this.recent.length > SHARE_WINDOW + 1) this.recent.shift();
    if (this.recent.length < SHARE_WINDOW + 1) return;
    const first = this.recent[0] as { atMs: number };
    const last = this.recent[SHARE_WINDOW] as { atMs: number; pauseMs: number };
    let paused = 0;
    for (let i = 1; i <= SHARE_WINDOW; i++) paused += (this.recent[i] as { pauseMs: number }).pauseMs;
    if (paused <= (last.atMs + last.pauseMs - first.atMs) * MAX_MARK_COMPACT_SHARE) return;
    this.mode = 'dynamic';
    this.recent = [];
    this.apply('dynamic');
    this.later(() => this.start(), DYNAMIC_FOR_MS);
  }
}

/** Whether node was given `--heap-growing-percent` on its command line (the operator's choice stands). */
export function operatorSetGrowth(execArgv: readonly string[]): boolean {
  return execArgv.some((arg) => flagName(arg) === 'heap-growing-percent');
}

/**
 * Governs V8's growing factor in this process from now on (the server commands call it once the server
 * listens); does nothing when node was given `--heap-growing-percent` itself. Returns whether it started.
 */
export function governHeapGrowth(
  onChange: (mode: HeapGrowthMode) => void = () => {},
  execArgv: readonly string[] = process.execArgv,
): boolean {
  if (operatorSetGrowth(execArgv)) return false;
  const policy = new HeapGrowthPolicy((mode) => {
    setFlagsFromString(`--heap-growing-percent=${mode === 'fixed' ? FIXED_GROWING_PERCENT : 0}`);
    onChange(mode);
  });
  // Node reports each collection after it, with its pause on the main thread as the duration.
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = (entry as { detail?: { kind?: number } }).detail?.kind;
      if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) policy.onMarkCompact(entry.startTime, entry.duration);
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  policy.start();
  return true;
}
