/**
 * The modes of `npm run bench:profile` (side-effect free: the entry point and every mode import it).
 */

export const MODES = {
  cpu: "V8's CPU profile of Tollgate under load (--heap: where it allocates, in bytes per request)",
  instructions:
    'instructions per request under callgrind, the bare proxy beside Tollgate; for A/B of small changes',
  gc: "V8's collections and bytes promoted per request, phase by phase of load",
  perf: '`perf record` under load: samples per 1,000 requests by module, native code and the kernel included',
} as const;

export type Mode = keyof typeof MODES;

/** The `--mode` flag, which every mode accepts so that its own flags parse beside it. */
export const MODE_FLAG = {
  type: 'string',
  help: `${Object.keys(MODES).join(' | ')} (default cpu)`,
} as const;

/** The usage line's script name for one mode. */
export function scriptName(mode: Mode): string {
  return `npm run bench:profile -- --mode ${mode}`;
}
