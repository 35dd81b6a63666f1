import { setFlagsFromString } from 'node:v8';
import { holdTickRecordShape } from './tick-shape.js';

/** The growing factor's fixed value, as `--heap-growing-percent` (factor 1.3: V8's own conservative one). */
export const FIXED_GROWING_PERCENT = 30;

/**
 * V8 flags a Tollgate process sets on itself before any of its other modules is loaded (bin/tollgate and
 * `npm run dev` call {@link tuneV8} first, which is why `src/runtime/` imports nothing of the project). For
 * operators, each flag is documented once: docs/operations.md, "Memory and Node's flags".
 *
 * `--no-allocation-site-pretenuring`: under load V8 marks some allocation sites that every request goes
 * through (the state object of Node's request stream, small object literals) as long-lived, and from then
 * on allocates their objects straight in the old generation. They die with their request, ~10 ms later,
 * but old-generation garbage is only reclaimed by the next mark-compact, so the heap grows between those
 * by several times what the young-generation collections promote. Without pretenuring they stay young and
 * die in the next scavenge: the heap grows more slowly under load and peaks lower (docs/performance.md,
 * "Memory: V8 flags set by `bin/tollgate`").
 *
 * `--heap-growing-percent=30`: the old generation's growing factor fixed at 1.3 from the start, so that
 * the mark-compacts of start-up do not let the heap grow to four times its live size before the first one
 * under load. A server hands it back to V8 for a while whenever its mark-compacts take more than 3% of
 * the time (`governHeapGrowth` in ./heap-growth.ts, started once it listens).
 */
export const V8_FLAGS: readonly string[] = [
  '--no-allocation-site-pretenuring',
  `--heap-growing-percent=${FIXED_GROWING_PERCENT}`,
];

/** A V8 flag's name without `--`, `--no-` or a value, spelt with dashes (V8 accepts underscores too). */
export function flagName(arg: string): string {
  return (arg.replace(/^--(no-)?/, '').split('=')[0] ?? '').replaceAll('_', '-');
}

/** The flags of {@link V8_FLAGS} that node was not already given on its command line, one way or the other. */
export function flagsToSet(execArgv: readonly string[]): string[] {
  return V8_FLAGS.filter((flag) => !execArgv.some((arg) => flagName(arg) === flagName(flag)));
}

/**
 * Sets the flags of {@link V8_FLAGS} the operator did not set explicitly; returns the ones it set. First it
 * holds one `process.nextTick` record, so that V8 keeps building them on its fast path (./tick-shape.ts).
 */
export function tuneV8(
  execArgv: readonly string[] = process.execArgv,
  set: (flags: string) => void = setFlagsFromString,
): string[] {
  holdTickRecordShape();
  const flags = flagsToSet(execArgv);
  for (const flag of flags) set(flag);
  return flags;
}
