/**
 * `npm run bench:profile -- --mode cpu|instructions|gc|perf`: instruments for studying where Tollgate's
 * cost per request goes, one process at a time, pinned as in `npm run bench`. `npm run bench` compares;
 * these explain. Each mode is a module of `bench/profile/` with flags of its own (`--mode M --help`).
 */
import { parseArgs } from 'node:util';
import { MODES, type Mode } from './profile/modes.js';

const run: Record<Mode, () => Promise<unknown>> = {
  cpu: () => import('./profile/cpu.js'),
  instructions: () => import('./profile/instructions.js'),
  gc: () => import('./profile/gc.js'),
  perf: () => import('./profile/perf.js'),
};

// Only --mode and --help are read here; the mode's module parses the whole command line again.
const { values } = parseArgs({
  args: process.argv.slice(2),
  options: { mode: { type: 'string' }, help: { type: 'boolean' } },
  strict: false,
});
const asked = typeof values.mode === 'string' ? values.mode : process.env.BENCH_MODE || undefined;
if (asked !== undefined && !Object.hasOwn(MODES, asked)) {
  process.stderr.write(`--mode must be one of ${Object.keys(MODES).join(', ')} (got ${asked})\n`);
  process.exit(2);
}
if (values.help && asked === undefined) {
  const modes = Object.entries(MODES).map(([name, what]) => `  ${name.padEnd(14)}${what}`);
  process.stdout.write(
    `npm run bench:profile -- --mode <mode> [options]   (--mode M --help for a mode's options)\n\n${modes.join('\n')}\n\n`,
  );
}
await run[(asked ?? 'cpu') as Mode]();
