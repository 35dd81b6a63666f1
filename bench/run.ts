/**
 * `npm run bench` — Tollgate against the physical limit, side by side in one run.
 *
 * For run in 1..N, for each target (fresh processes every time): the simulator alone, a bare undici proxy,
 * Tollgate on SQLite, Tollgate on PostgreSQL + Redis, and Portkey's gateway when installed. Each is
 * measured at c50 (req/s, CPU per request, peak RSS), at c1 (unloaded latency) and open-loop at a fixed
 * rate; Tollgate also by its own `x-tollgate-overhead-ms`. Prints a table with ratios against the bare
 * proxy and the goals, and writes `bench/results/<ISO time>.json`. See docs/performance.md.
 */
import { measure } from './measure.js';
import { readFlags } from './options.js';
import { LoadGen, NO_PIN_FLAG, requireWrk, runScript } from './processes.js';
import {
  evaluateGoals,
  fmt,
  machineInfo,
  type RunRecord,
  renderGoals,
  renderTable,
  summarize,
  writeResults,
} from './report.js';
import { ALL_TARGETS, TARGET_LABELS, type TargetName } from './target-names.js';
import { type RunningTarget, startTarget, tempDir, Unavailable } from './targets.js';

const flags = readFlags('npm run bench --', {
  runs: { type: 'string', help: 'interleaved runs; the median is reported (default 3)' },
  duration: { type: 'string', help: 'seconds of each measured phase (default 10)' },
  warmup: { type: 'string', help: 'seconds of c50 warm-up before measuring (default 5)' },
  only: { type: 'string', help: `comma-separated targets (${ALL_TARGETS.join(',')})` },
  quick: { type: 'boolean', help: 'smoke test: 1 run, 3 s phases, 1 s warm-up' },
  rate: { type: 'string', help: 'offered rate of the fixed-rate open-loop phase (default 200)' },
  connections: { type: 'string', help: 'connections of the closed-loop maximum (default 50)' },
  accounts: {
    type: 'string',
    help: "accounts (one key each) Tollgate's load is spread over, request by request (default 1)",
  },
  'pg-url': {
    type: 'string',
    help: 'admin URL used to create a database per run (default postgres://postgres@127.0.0.1:5432/test)',
  },
  'redis-url': {
    type: 'string',
    help: 'Redis of the PostgreSQL target, none for none (default redis://127.0.0.1:6379)',
  },
  'no-pin': NO_PIN_FLAG,
  env: {
    type: 'string',
    help: "Tollgate's extra environment, e.g. SQLITE_CHECKPOINT=inline,METRICS_ENABLED=false",
  },
});

const quick = flags.boolean('quick');
const options = {
  runs: Math.max(1, Math.round(flags.number('runs', quick ? 1 : 3))),
  durationSec: flags.number('duration', quick ? 3 : 10),
  warmupSec: flags.number('warmup', quick ? 1 : 5),
  fixedRate: flags.number('rate', 200),
  connections: Math.max(1, Math.round(flags.number('connections', 50))),
  accounts: Math.max(1, Math.round(flags.number('accounts', 1))),
  pgAdminUrl: flags.string('pg-url') ?? 'postgres://postgres@127.0.0.1:5432/test',
  redisUrl: flags.string('redis-url') ?? 'redis://127.0.0.1:6379',
};
const generator = requireWrk();
const tollgateEnv = flags.env('env');
const only = flags.list('only');
const unknown = only?.filter((t) => !ALL_TARGETS.includes(t as TargetName)) ?? [];
if (unknown.length > 0) {
  process.stderr.write(`unknown target(s): ${unknown.join(', ')}; known: ${ALL_TARGETS.join(', ')}\n`);
  process.exit(2);
}
const targets = ALL_TARGETS.filter((t) => !only || only.includes(t));

runScript('bench', flags.boolean('no-pin'), async ({ pinning, startedAt, log }) => {
  const machine = machineInfo();
  log(`c${options.connections} closed loop: wrk (${generator.kind === 'wrk' ? generator.path : ''})`);
  log(
    `${options.runs} run(s) × [${targets.join(', ')}]: c${options.connections} ${options.durationSec}s after ${options.warmupSec}s warm-up, ` +
      `c1 and an open loop at ${options.fixedRate}/s (${options.durationSec}s each)`,
  );

  const records: RunRecord[] = [];
  const unavailable = new Map<TargetName, string>();
  for (let run = 1; run <= options.runs; run++) {
    for (const name of targets) {
      if (unavailable.has(name)) continue;
      const label = `run ${run}/${options.runs} ${TARGET_LABELS[name]}`;
      const temp = tempDir(name);
      const loadgen = LoadGen.start(pinning.load);
      let target: RunningTarget | undefined;
      try {
        log(`${label}: starting`);
        try {
          target = await startTarget(name, {
            pinning,
            dir: temp.dir,
            pgAdminUrl: options.pgAdminUrl,
            redisUrl: options.redisUrl,
            tollgateEnv,
            accounts: options.accounts,
          });
        } catch (err) {
          const reason = err instanceof Error ? err.message : String(err);
          // The optional targets are reported as unavailable on any start-up failure, the others only when
          // they say so; a failure of theirs is a failed run, reported as such.
          if (err instanceof Unavailable || name === 'postgres' || name === 'portkey') {
            unavailable.set(name, reason.split('\n')[0] ?? reason);
            log(`${label}: unavailable — ${reason.split('\n')[0]}`);
            continue;
          }
          throw err;
        }
        const metrics = await measure(target, loadgen, { ...options, generator }, (line) =>
          log(`${label}: ${line}`),
        );
        records.push({ run, target: name, metrics });
        const err = metrics.errorRate > 0 ? `, errors ${(metrics.errorRate * 100).toFixed(2)}%` : '';
        log(
          `${label}: ${metrics.c50.rps.toFixed(0)} req/s, c1 p50 ${metrics.c1.latency.p50.toFixed(3)} ms, ` +
            `CPU ${metrics.cpuUsPerReq?.toFixed(0) ?? '—'} µs/req${err}`,
        );
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        records.push({ run, target: name, error: reason });
        log(`${label}: FAILED — ${reason}`);
      } finally {
        await target?.stop().catch(() => undefined);
        await loadgen.close();
        temp.remove();
      }
    }
  }

  const summaries = summarize(targets, records, unavailable, options.fixedRate);
  const goals = evaluateGoals(summaries);
  const finishedAt = new Date();

  process.stdout.write(
    `\nTollgate benchmark — median of ${options.runs} interleaved run(s); ratios against the bare proxy, per run\n`,
  );
  process.stdout.write(`${renderTable(summaries)}\n\n`);
  process.stdout.write(
    `req/s: c${options.connections} closed loop (wrk) · c1: unloaded latency · +p50/+p99: minus the upstream simulator's, in the same phase · ` +
      `header: median x-tollgate-overhead-ms, calls one at a time · ${options.fixedRate}/s: open loop, latency from the scheduled send time · ` +
      'CPU: target process over the c50 window · RSS: VmHWM after c50 · errors: non-200 + failed, worst phase\n\n',
  );
  for (const s of summaries) {
    for (const failure of s.failures) process.stdout.write(`${s.label} ${failure}\n`);
    if (s.overheadHeaderUs === undefined) continue;
    // The header starts at Tollgate's first hook and ends at its response headers: Node's HTTP parsing and
    // writing, and the upstream client's own work, fall outside it but inside the measured added latency.
    process.stdout.write(
      `${s.label}: x-tollgate-overhead-ms median ${fmt(s.overheadHeaderUs)} µs, against its measured ` +
        `added p50 of ${fmt(s.addedP50Us)} µs at c1 (the header leaves out both HTTP hops)\n`,
    );
  }
  process.stdout.write(`${renderGoals(goals)}\n`);

  const file = writeResults(
    '',
    {
      kind: 'tollgate-bench',
      startedAt: startedAt.toISOString(),
      finishedAt: finishedAt.toISOString(),
      options: { ...options, targets, quick, tollgateEnv, generator: 'wrk' },
      machine: { ...machine, loadavgAtEnd: machineInfo().loadavg },
      pinning,
      summaries,
      goals,
      runs: records,
    },
    startedAt,
  );
  process.stdout.write(`\nJSON: ${file}\n`);
});
