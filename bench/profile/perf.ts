/**
 * `npm run bench:profile -- --mode perf`: where each target's CPU time goes, sampled in the real process
 * (not under valgrind), per 1,000 requests, side by side.
 *
 * Each target (by default the bare proxy and Tollgate on SQLite) runs alone, pinned as in `npm run bench`,
 * with V8 writing its perf map (`--perf-basic-prof`). After a warm-up of closed-loop load (autocannon,
 * c50), `perf record -g` samples the process on a CPU clock for as long as a second load window runs, and
 * every sample is counted for the part of the process that owns the innermost JavaScript frame of its
 * stack (`bench/profile/perf-script.ts`): a Tollgate module, an npm package, a Node built-in module, or no
 * JavaScript frame at all. Native work (SQLite, V8's runtime, the kernel) counts for the JavaScript that
 * called it. Samples per 1,000 requests compare targets that served different numbers of requests; at
 * `--frequency` F Hz one sample stands for 1/F s of CPU.
 *
 * perf names JavaScript from the map V8 appends to as it compiles; V8 reuses code space, so a few samples
 * may be named after code that used to be at their address (a package that runs nothing per request, such
 * as `semver`, showing a sample or two per 1,000 requests).
 *
 * Unlike `--mode instructions` it sees V8's tiers as they are in a real run (under valgrind code stays far
 * longer in the baseline tier) and the kernel's share; unlike `--mode cpu` it sees native code and other
 * threads. Needs `perf` (linux-perf) allowed to sample other processes. Writes `bench/results/perf-<ISO
 * time>.json`; `--keep DIR` keeps perf's data and V8's maps for `perf report`.
 */
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import autocannon from 'autocannon';
import type { RequestSpec } from '../loadgen.js';
import { readFlags } from '../options.js';
import { cleanupAll, compileChildScripts, detectPinning, pinSelf, ROOT, requireTool } from '../processes.js';
import { fmt, machineInfo, table, writeResults } from '../report.js';
import { TARGET_LABELS } from '../target-names.js';
import { startTarget, tempDir } from '../targets.js';
import { MODE_FLAG, scriptName } from './modes.js';
import { NO_JS, parsePerfScript, samplesByOwner } from './perf-script.js';

const SAMPLED = {
  bare: TARGET_LABELS.bare,
  sqlite: TARGET_LABELS.sqlite,
  postgres: TARGET_LABELS.postgres,
} as const;
type Sampled = keyof typeof SAMPLED;

const flags = readFlags(scriptName('perf'), {
  mode: MODE_FLAG,
  only: { type: 'string', help: 'comma-separated targets: bare, sqlite, postgres (default bare,sqlite)' },
  duration: { type: 'string', help: 'seconds sampled (default 10)' },
  warmup: { type: 'string', help: 'seconds of load before sampling (default 10)' },
  connections: { type: 'string', help: 'concurrent connections of the load (default 50)' },
  frequency: { type: 'string', help: 'samples per second of CPU (default 2999)' },
  rows: { type: 'string', help: 'parts of the process listed, the largest first (default 25)' },
  'pg-url': {
    type: 'string',
    help: 'PostgreSQL admin URL for the postgres target (default postgres://postgres@127.0.0.1:5432/test)',
  },
  keep: { type: 'string', help: "copy perf's data files and V8's perf maps to this directory" },
  env: { type: 'string', help: "Tollgate's extra environment, e.g. SQLITE_CHECKPOINT=inline" },
});

const targets: Sampled[] = flags.choices('only', SAMPLED, ['bare', 'sqlite']);
const duration = Math.max(1, flags.number('duration', 10));
const warmup = Math.max(0, flags.number('warmup', 10));
const connections = Math.max(1, Math.round(flags.number('connections', 50)));
const frequency = Math.max(1, Math.round(flags.number('frequency', 2999)));
const rowCount = Math.max(1, Math.round(flags.number('rows', 25)));
const keep = flags.string('keep');

requireTool(scriptName('perf'), 'perf', 'apt-get install -y linux-perf');
compileChildScripts();

/** Closed-loop load for `seconds`; the requests answered. Throws on any answer but 2xx, or an error. */
async function load(spec: RequestSpec, seconds: number): Promise<number> {
  const result = await autocannon({
    url: spec.url,
    method: spec.method,
    headers: spec.headers,
    body: spec.body,
    connections,
    pipelining: 1,
    duration: seconds,
  });
  if (result.non2xx > 0 || result.errors > 0) {
    throw new Error(`${result.non2xx} answers not 2xx and ${result.errors} errors`);
  }
  return result.requests.total;
}

/** `perf record` of process `pid` for `seconds`; resolves once perf has written `file`. */
function record(pid: number, file: string, seconds: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const perf = spawn(
      'perf',
      [
        'record',
        '-F',
        String(frequency),
        '-g',
        '-p',
        String(pid),
        '-o',
        file,
        '--',
        'sleep',
        String(seconds),
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    perf.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    perf.on('error', reject);
    perf.on('exit', (code) => {
      if (code === 0) resolve();
      else reject(new Error(`perf record exited with ${code}: ${stderr.trim().slice(-500)}`));
    });
  });
}

const startedAt = new Date();
const pinning = detectPinning(false);
pinSelf(pinning.load);
const temp = tempDir('perf-');
const results: { target: Sampled; requests: number; samples: number; byOwner: Record<string, number> }[] = [];

try {
  for (const name of targets) {
    process.stderr.write(`${SAMPLED[name]}: starting with --perf-basic-prof…\n`);
    const target = await startTarget(name, {
      pinning,
      dir: temp.dir,
      pgAdminUrl: flags.string('pg-url') ?? 'postgres://postgres@127.0.0.1:5432/test',
      tollgateEnv: flags.env('env'),
      wrap: ['/usr/bin/env', 'NODE_OPTIONS=--perf-basic-prof'],
    });
    const data = join(temp.dir, `perf.${name}.data`);
    const map = `/tmp/perf-${target.pid}.map`;
    try {
      process.stderr.write(`${SAMPLED[name]}: ${warmup} s of warm-up at c${connections}…\n`);
      if (warmup > 0) await load(target.request, warmup);
      process.stderr.write(`${SAMPLED[name]}: sampling ${duration} s at ${frequency} Hz…\n`);
      const [requests] = await Promise.all([
        load(target.request, duration),
        record(target.pid, data, duration),
      ]);
      // perf names JIT code from the map, which stays after the process ends; the script reads it now.
      const text = execFileSync('perf', ['script', '-i', data, '-F', 'tid,ip,sym'], {
        encoding: 'utf8',
        maxBuffer: 2 * 1024 * 1024 * 1024,
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      const samples = parsePerfScript(text);
      results.push({
        target: name,
        requests,
        samples: samples.length,
        byOwner: Object.fromEntries(samplesByOwner(samples)),
      });
      process.stderr.write(`${SAMPLED[name]}: ${samples.length} samples over ${requests} requests\n`);
      if (keep) {
        mkdirSync(keep, { recursive: true });
        copyFileSync(data, join(keep, `perf.${name}.data`));
        copyFileSync(map, join(keep, `perf-${target.pid}.map`));
      }
    } finally {
      await target.stop();
      rmSync(map, { force: true });
      for (const f of readdirSync(ROOT)) {
        if (f.startsWith('isolate-') && f.endsWith(`-${target.pid}-v8.log`))
          rmSync(join(ROOT, f), { force: true });
      }
    }
  }
} finally {
  await cleanupAll();
  temp.remove();
}

const perThousand = (r: (typeof results)[number], owner: string) =>
  ((r.byOwner[owner] ?? 0) * 1000) / r.requests;
const last = results.at(-1);
const owners = [...new Set(results.flatMap((r) => Object.keys(r.byOwner)))].sort(
  (a, b) => (last ? perThousand(last, b) - perThousand(last, a) : 0) || a.localeCompare(b),
);
const shown = owners.slice(0, rowCount);
const rest = owners.slice(rowCount);
const rows = shown.map((owner) => [owner, ...results.map((r) => fmt(perThousand(r, owner), 1))]);
if (rest.length > 0) {
  rows.push([
    `(${rest.length} more)`,
    ...results.map((r) =>
      fmt(
        rest.reduce((sum, owner) => sum + perThousand(r, owner), 0),
        1,
      ),
    ),
  ]);
}
rows.push(['total', ...results.map((r) => fmt((r.samples * 1000) / r.requests, 1))]);
rows.push([
  '= CPU µs per request',
  ...results.map((r) => fmt((r.samples * 1e6) / frequency / r.requests, 1)),
]);
process.stdout.write(
  `\nSamples per 1,000 requests by the innermost JavaScript frame's owner (perf, ${frequency} Hz, c${connections}, ${duration} s after ${warmup} s; "${NO_JS}": the event loop, system calls, V8's threads)\n${table(
    ['part of the process', ...results.map((r) => SAMPLED[r.target])],
    rows,
  )}\n`,
);
const file = writeResults(
  'perf-',
  {
    kind: 'tollgate-perf',
    startedAt: startedAt.toISOString(),
    options: { targets, duration, warmup, connections, frequency },
    machine: machineInfo(),
    pinning,
    results,
  },
  startedAt,
);
process.stdout.write(`JSON: ${file}\n`);
