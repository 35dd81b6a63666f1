/**
 * `npm run bench:soak` — is Tollgate's memory flat under steady load?
 *
 * Tollgate on SQLite (billing every call) is offered a steady open-loop rate — by default half of its own
 * c50 maximum, measured first — for `--duration` seconds (300 by default), in segments whose latency and
 * errors are reported. Its RSS is sampled every `--sample-every` seconds. After the `--settle` warm-up,
 * memory is flat when every sample stays within ±10% of the first one after it. Writes
 * `bench/results/soak-<ISO time>.json`. See docs/performance.md.
 */
import type { ClosedResult, OpenResult } from './loadgen.js';
import { readFlags } from './options.js';
import { peakRssKb, rssKb } from './proc-stats.js';
import { LoadGen, NO_PIN_FLAG, requireWrk, runScript } from './processes.js';
import { fmt, machineInfo, table, writeResults } from './report.js';
import { type RunningTarget, startTarget, tempDir } from './targets.js';

const flags = readFlags('npm run bench:soak --', {
  duration: { type: 'string', help: 'seconds of steady load (default 300)' },
  rate: { type: 'string', help: 'offered requests/s (default: half of the measured c50 maximum)' },
  'no-pin': NO_PIN_FLAG,
  env: {
    type: 'string',
    help: "Tollgate's extra environment, e.g. SQLITE_CACHE_MB=16,METRICS_ENABLED=false",
  },
});

const durationSec = flags.number('duration', 300);
const options = {
  durationSec,
  /** RSS sampled every 5 s; the first 60 s (at most a fifth) are warm-up; segments of 30 s; ±10%. */
  sampleEverySec: 5,
  settleSec: Math.min(60, durationSec / 5),
  segmentSec: 30,
  tolerancePercent: 10,
  rate: flags.string('rate') === undefined ? undefined : flags.number('rate', 0),
  tollgateEnv: flags.env('env'),
};
const generator = requireWrk();

interface Sample {
  atSec: number;
  rssMb: number;
}

runScript('bench:soak', flags.boolean('no-pin'), async ({ pinning, startedAt, log }) => {
  const temp = tempDir('soak');
  const loadgen = LoadGen.start(pinning.load);
  let target: RunningTarget | undefined;
  let sampler: NodeJS.Timeout | undefined;
  try {
    target = await startTarget('sqlite', {
      pinning,
      dir: temp.dir,
      pgAdminUrl: '',
      tollgateEnv: options.tollgateEnv,
    });
    const { pid, request } = target;

    let rate = options.rate;
    if (rate === undefined || rate <= 0) {
      log('measuring the c50 maximum (5 s after 2 s warm-up)');
      const max = await loadgen.run<ClosedResult>({
        kind: 'closed',
        generator,
        request,
        connections: 50,
        warmupSec: 2,
        durationSec: 5,
        cpu: [],
      });
      rate = Math.max(1, Math.round(max.rps / 2));
      log(`c50 maximum ${max.rps.toFixed(0)} req/s → offering ${rate}/s`);
    }

    const samples: Sample[] = [];
    const soakStart = performance.now();
    const sample = () => {
      const kb = rssKb(pid);
      if (kb !== undefined) samples.push({ atSec: (performance.now() - soakStart) / 1000, rssMb: kb / 1024 });
    };
    sample();
    sampler = setInterval(sample, options.sampleEverySec * 1000);

    const segments: (OpenResult & { fromSec: number })[] = [];
    let elapsed = 0;
    while (elapsed < options.durationSec - 0.5) {
      const seconds = Math.min(options.segmentSec, options.durationSec - elapsed);
      const result = await loadgen.run<OpenResult>({
        kind: 'open',
        request,
        rate,
        warmupSec: 0,
        durationSec: seconds,
      });
      segments.push({ ...result, fromSec: elapsed });
      const last = samples[samples.length - 1];
      log(
        `${elapsed.toFixed(0)}–${(elapsed + seconds).toFixed(0)} s: ${result.achievedRate.toFixed(0)}/s, ` +
          `p50 ${result.latency.p50.toFixed(2)} ms, p99 ${result.latency.p99.toFixed(2)} ms, ` +
          `errors ${(result.errorRate * 100).toFixed(2)}%, RSS ${last ? last.rssMb.toFixed(0) : '—'} MB`,
      );
      elapsed = (performance.now() - soakStart) / 1000;
    }
    clearInterval(sampler);
    sampler = undefined;
    sample();

    const settled = samples.filter((s) => s.atSec >= options.settleSec);
    const baseline = settled[0];
    const values = settled.map((s) => s.rssMb);
    const min = values.length > 0 ? Math.min(...values) : undefined;
    const max = values.length > 0 ? Math.max(...values) : undefined;
    const last = settled[settled.length - 1];
    const tolerance = options.tolerancePercent / 100;
    const flat =
      baseline !== undefined &&
      settled.every((s) => Math.abs(s.rssMb - baseline.rssMb) <= baseline.rssMb * tolerance);
    const hwm = peakRssKb(pid);

    process.stdout.write(`\nTollgate soak — SQLite, open loop at ${rate}/s for ${options.durationSec} s\n\n`);
    process.stdout.write(
      `${table(
        ['from s', 'achieved/s', 'p50 ms', 'p99 ms', 'max ms', 'errors'],
        segments.map((s) => [
          fmt(s.fromSec),
          fmt(s.achievedRate),
          fmt(s.latency.p50, 2),
          fmt(s.latency.p99, 2),
          fmt(s.latency.max, 1),
          `${fmt(s.errorRate * 100, 2)}%${s.errorRate > 0.01 ? ' !' : ''}`,
        ]),
      )}\n\n`,
    );
    const every = Math.max(1, Math.ceil(samples.length / 20));
    process.stdout.write(
      `RSS samples (every ${options.sampleEverySec} s${every > 1 ? `, 1 in ${every} shown` : ''}): ${samples
        .filter((_, i) => i % every === 0 || i === samples.length - 1)
        .map((s) => `${s.atSec.toFixed(0)}s ${s.rssMb.toFixed(0)}`)
        .join(' · ')}\n`,
    );
    process.stdout.write(
      `After ${options.settleSec.toFixed(0)} s of warm-up: first ${fmt(baseline?.rssMb, 1)} MB, min ${fmt(min, 1)}, ` +
        `max ${fmt(max, 1)}, last ${fmt(last?.rssMb, 1)} MB; peak (VmHWM) ${fmt(hwm === undefined ? undefined : hwm / 1024, 1)} MB\n`,
    );
    process.stdout.write(
      `${flat ? 'PASS' : 'FAIL'}  memory flat (±${options.tolerancePercent}% of the first settled sample) over ${options.durationSec} s\n`,
    );

    const file = writeResults(
      'soak-',
      {
        kind: 'tollgate-bench-soak',
        startedAt: startedAt.toISOString(),
        finishedAt: new Date().toISOString(),
        options: { ...options, rate, generator: 'wrk' },
        machine: machineInfo(),
        pinning,
        rss: {
          samples,
          settledFirstMb: baseline?.rssMb,
          minMb: min,
          maxMb: max,
          lastMb: last?.rssMb,
          peakMb: hwm === undefined ? undefined : hwm / 1024,
          flat,
        },
        segments,
      },
      startedAt,
    );
    process.stdout.write(`\nJSON: ${file}\n`);
  } finally {
    if (sampler) clearInterval(sampler);
    await target?.stop().catch(() => undefined);
    await loadgen.close();
    temp.remove();
  }
});
