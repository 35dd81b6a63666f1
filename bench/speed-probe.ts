/**
 * How fast a CPU runs right now: the CPU time of one fixed piece of work, pinned to that CPU.
 *
 * On a shared virtual machine the speed of a CPU can change severalfold between the minutes in which one
 * run measures two targets: a ratio between them then measures the machine, not the targets
 * (docs/performance.md, "Running the benchmark"). The benchmark runs this probe on the target's CPU before
 * and after each target's phases, while the target is idle, so the report can leave out the comparisons of
 * runs whose CPU did not run at one speed throughout (`bench/report.ts`, `sameSpeed`).
 *
 * The work is what a gateway does most of per call besides its system calls: JSON of a chat completion's
 * size written and parsed back. It runs in a fresh `node` (pinned with `taskset` when the benchmark pins),
 * in repetitions of ~10 ms of CPU on a fast machine; the median repetition is the figure, so the first
 * ones, still compiling, do not count. Each repetition is timed by its own CPU time (user + system), as
 * the benchmark times the targets: another process sharing the CPU (the target's last work, a WAL
 * checkpoint, a compile) takes turns with it but does not lengthen it, while a slower CPU does.
 */
import { execFileSync } from 'node:child_process';

/** Repetitions of `ITERATIONS` round trips; the median one is reported. */
const REPETITIONS = 25;
const ITERATIONS = 2_000;

const CHILD_SOURCE = `
const answer = {
  id: 'chatcmpl-0123456789abcdefghijklmnopqrs', object: 'chat.completion', created: 1764200000,
  model: 'deepseek-chat',
  choices: [{ index: 0, message: { role: 'assistant', content: 'The quick brown fox jumps over the lazy dog. '.repeat(8) },
    finish_reason: 'stop' }],
  usage: { prompt_tokens: 12, completion_tokens: 56, total_tokens: 68 },
};
const times = [];
let sink = 0;
for (let rep = 0; rep < ${REPETITIONS}; rep++) {
  const start = process.cpuUsage();
  for (let i = 0; i < ${ITERATIONS}; i++) {
    const copy = JSON.parse(JSON.stringify(answer));
    copy.usage.total_tokens += i;
    sink += copy.usage.total_tokens & 1;
  }
  const used = process.cpuUsage(start);
  times.push((used.user + used.system) / 1000);
}
times.sort((a, b) => a - b);
process.stdout.write(JSON.stringify({ ms: times[Math.floor(times.length / 2)], sink }));
`;

/**
 * Milliseconds of CPU the probe's repetition takes on `cpu` (unpinned when undefined): lower is faster.
 * Throws when the probe cannot run or prints something else.
 */
export function probeSpeed(cpu: string | undefined): number {
  const node = process.execPath;
  const args = ['--input-type=commonjs', '-e', CHILD_SOURCE];
  const [command, argv] = cpu === undefined ? [node, args] : ['taskset', ['-c', cpu, node, ...args]];
  let out: string;
  try {
    out = execFileSync(command, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const stderr = String((err as { stderr?: unknown }).stderr ?? '').trim();
    throw new Error(
      `the speed probe failed${cpu === undefined ? '' : ` on CPU ${cpu}`}: ${stderr || String(err)}`,
    );
  }
  let ms: unknown;
  try {
    ms = (JSON.parse(out) as { ms?: unknown }).ms;
  } catch {
    ms = undefined;
  }
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms <= 0) {
    throw new Error(`the speed probe printed ${JSON.stringify(out.slice(0, 200))}`);
  }
  return ms;
}
