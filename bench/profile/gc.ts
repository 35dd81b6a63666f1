/**
 * `npm run bench:profile -- --mode gc`: what each phase of load costs in garbage collection. The measured
 * process (Tollgate on SQLite, or the bare proxy) runs with V8's `--trace-gc-nvp` (preloaded by
 * `bench/profile/gc-trace.mjs`), pinned as in `npm run bench`, through a sequence of phases (`--phases`,
 * default `c50:10,idle:3,200:20,idle:3,200:20,half:20`): closed loop on wrk (or autocannon), open loop at
 * a rate, or no load. The 200/s phase comes twice, so that the first phase after a change of load can be
 * told from a steady one. For each phase: the scavenges and mark-compacts, the bytes allocated, the bytes
 * promoted to the old generation (what brings the next mark-compact) per answered request, and the
 * longest pauses: where the mark-compacts behind a latency tail come from. One fresh process per target;
 * `--only sqlite,bare` runs both in turn. Writes `bench/results/gc-<ISO time>.json`.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ClosedResult, OpenResult } from '../loadgen.js';
import { readFlags } from '../options.js';
import {
  chooseGenerator,
  cleanupAll,
  compileChildScripts,
  detectPinning,
  GENERATOR_FLAG,
  LoadGen,
  NO_PIN_FLAG,
  pinSelf,
  ROOT,
} from '../processes.js';
import { fmt, machineInfo, table, writeResults } from '../report.js';
import { TARGET_LABELS } from '../target-names.js';
import { startTarget, tempDir } from '../targets.js';
import { gcByPhase, type PhaseGc, type PhaseWindow, parseGcTrace, parsePhases, phaseName } from './gc-log.js';
import { MODE_FLAG, scriptName } from './modes.js';

const DEFAULT_PHASES = 'c50:10,idle:3,200:20,idle:3,200:20,half:20';
const TARGETS = { sqlite: TARGET_LABELS.sqlite, bare: TARGET_LABELS.bare } as const;

const flags = readFlags(scriptName('gc'), {
  mode: MODE_FLAG,
  only: { type: 'string', help: 'comma-separated targets: sqlite, bare (default sqlite,bare)' },
  phases: { type: 'string', help: `the load, phase by phase (default ${DEFAULT_PHASES})` },
  'no-pin': NO_PIN_FLAG,
  generator: GENERATOR_FLAG,
  env: { type: 'string', help: "Tollgate's extra environment, e.g. SQLITE_CHECKPOINT=inline" },
});

let phases: ReturnType<typeof parsePhases>;
try {
  phases = parsePhases(flags.string('phases') ?? DEFAULT_PHASES);
} catch (err) {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(2);
}
const targets = flags.choices('only', TARGETS, ['sqlite', 'bare']);
const pinning = detectPinning(flags.boolean('no-pin'));
// As in `npm run bench`: the measured process alone on CPU 0; this script with the load on CPU 1.
pinSelf(pinning.load);
const closedLoop = chooseGenerator(flags.string('generator'));
const startedAt = new Date();
const log = (line: string) => {
  const t = ((Date.now() - startedAt.getTime()) / 1000).toFixed(0).padStart(4);
  process.stderr.write(`[${t}s] ${line}\n`);
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

compileChildScripts();
log(
  `pinning: ${pinning.enabled ? pinning.reason : `off (${pinning.reason})`}; closed loop: ${closedLoop.reason}`,
);

interface TargetReport {
  target: keyof typeof TARGETS;
  phases: (PhaseGc & { load: string })[];
}
const reports: TargetReport[] = [];
for (const name of targets) {
  const temp = tempDir(`gc-${name}`);
  const loadgen = LoadGen.start(pinning.load);
  try {
    const target = await startTarget(name, {
      pinning,
      dir: temp.dir,
      pgAdminUrl: '',
      tollgateEnv: flags.env('env'),
      nodeOptions: `--import=${pathToFileURL(join(ROOT, 'bench', 'profile', 'gc-trace.mjs')).href}`,
    });
    const windows: PhaseWindow[] = [];
    const loads: string[] = [];
    let lastMax: number | undefined;
    for (const phase of phases) {
      const start = Date.now();
      let requests = 0;
      let load = '';
      let halfRate: number | undefined;
      if (phase.kind === 'idle') {
        await sleep(phase.seconds * 1000);
      } else if (phase.kind === 'closed') {
        const r = await loadgen.run<ClosedResult>({
          kind: 'closed',
          generator: closedLoop.generator,
          request: target.request,
          connections: phase.connections,
          warmupSec: 0,
          durationSec: phase.seconds,
          cpu: [],
        });
        requests = r.ok;
        lastMax = r.rps;
        load = `${fmt(r.rps)} req/s`;
      } else {
        halfRate = phase.rate === 'half' ? Math.max(1, Math.round((lastMax ?? 0) / 2)) : phase.rate;
        const r = await loadgen.run<OpenResult>({
          kind: 'open',
          request: target.request,
          rate: halfRate,
          warmupSec: 0,
          durationSec: phase.seconds,
        });
        requests = r.ok;
        load = `p99 ${fmt(r.latency.p99, 2)} ms, p999 ${fmt(r.latency.p999, 2)}`;
      }
      const label = phaseName(phase, halfRate);
      windows.push({ name: label, start, end: Date.now(), requests });
      loads.push(load);
      log(`${TARGETS[name]}: ${label} ${phase.seconds}s${load ? `, ${load}` : ''}`);
    }
    await target.stop();
    const byPhase = gcByPhase(parseGcTrace(target.process.output()), windows);
    reports.push({ target: name, phases: byPhase.map((p, i) => ({ ...p, load: loads[i] ?? '' })) });
  } finally {
    await loadgen.close();
    temp.remove();
  }
}
await cleanupAll();

for (const report of reports) {
  console.log(`\n${TARGETS[report.target]}`);
  console.log(
    table(
      [
        'phase',
        'load',
        'scavenges',
        'allocated MB',
        'promoted MB',
        'promoted B/req',
        'longest scavenge ms',
        'mark-compacts',
        'longest ms',
      ],
      report.phases.map((p) => [
        `${p.name} ${p.seconds.toFixed(0)}s`,
        p.load,
        String(p.scavenges),
        fmt(p.allocatedMb, 1),
        fmt(p.promotedMb, 2),
        fmt(p.promotedPerRequest),
        fmt(p.maxScavengeMs, 1),
        String(p.markCompacts),
        p.markCompacts > 0 ? fmt(p.maxMarkCompactMs, 1) : '—',
      ]),
    ),
  );
}
console.log(
  '\npromoted: bytes V8 moved from the young to the old generation in the phase (what brings the next mark-compact) · per answered request · pauses on the main thread',
);
const file = writeResults(
  'gc-',
  { machine: machineInfo(), phases: flags.string('phases') ?? DEFAULT_PHASES, reports },
  startedAt,
);
console.log(`\nJSON: ${file}`);
