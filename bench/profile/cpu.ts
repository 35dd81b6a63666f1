/**
 * `npm run bench:profile` (`--mode cpu`, the default): where a Tollgate process spends its CPU under load,
 * from V8's sampling profiler; with `--heap`, where it allocates, in bytes per answered request.
 *
 * Each target in `--only` (Tollgate on SQLite by default, or on PostgreSQL) starts alone, pinned as in
 * `npm run bench`, with `bench/profile/sampler.mjs` preloaded. After `--warmup` seconds of load, so that
 * start-up and the compilers' first passes stay out of it, the profiler runs for `--duration` seconds of
 * the same load. The load is the benchmark's closed loop (wrk when it is on PATH, or `--generator
 * autocannon`), or with `--rate N` its open loop at N requests/s. The report lists the project's functions
 * by inclusive time (`--all`: every function), then files and packages, then functions, by self time.
 * `--keep DIR` keeps the profile (`.cpuprofile` or `.heapprofile`) for Chrome DevTools.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ClosedResult, OpenResult, RequestSpec } from '../loadgen.js';
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
import { fmt } from '../report.js';
import { TARGET_LABELS } from '../target-names.js';
import { startTarget, tempDir } from '../targets.js';
import { MODE_FLAG, scriptName } from './modes.js';

const PROFILED = { sqlite: TARGET_LABELS.sqlite, postgres: TARGET_LABELS.postgres } as const;
const SAMPLER = pathToFileURL(join(ROOT, 'bench', 'profile', 'sampler.mjs')).href;

const flags = readFlags(scriptName('cpu'), {
  mode: MODE_FLAG,
  only: { type: 'string', help: 'comma-separated targets: sqlite, postgres (default sqlite)' },
  heap: {
    type: 'boolean',
    help: 'where the bytes are allocated (sampling heap profiler) instead of the time',
  },
  duration: { type: 'string', help: 'seconds profiled (default 8)' },
  warmup: { type: 'string', help: 'seconds of load before the profiler starts (default 3)' },
  connections: { type: 'string', help: 'connections of the closed loop (default 50)' },
  rate: { type: 'string', help: 'an open loop at this many requests/s instead of the closed loop' },
  generator: GENERATOR_FLAG,
  all: { type: 'boolean', help: "list every function by inclusive time, not only the project's" },
  keep: { type: 'string', help: 'directory to keep the .cpuprofile / .heapprofile in' },
  env: { type: 'string', help: "Tollgate's extra environment, e.g. METRICS_ENABLED=false" },
  'pg-url': {
    type: 'string',
    help: 'PostgreSQL admin URL for the postgres target (default postgres://postgres@127.0.0.1:5432/test)',
  },
  'no-pin': NO_PIN_FLAG,
});
const targets = flags.choices('only', PROFILED, ['sqlite']);
const heap = flags.boolean('heap');
const seconds = flags.number('duration', 8) || 8;
const warmup = flags.number('warmup', 3);
const connections = Math.max(1, Math.round(flags.number('connections', 50)));
const rate = flags.string('rate') === undefined ? undefined : flags.number('rate', 0);
if (rate !== undefined && !(rate > 0)) {
  process.stderr.write('--rate takes a number of requests per second\n');
  process.exit(2);
}
const keep = flags.string('keep');
const closedLoop = chooseGenerator(flags.string('generator'));

// As in `npm run bench`: the profiled process alone on CPU 0; the simulator, the load and this script on
// CPU 1.
const pinning = detectPinning(flags.boolean('no-pin'));
pinSelf(pinning.load);
compileChildScripts();
const log = (line: string) => process.stderr.write(`${line}\n`);
log(rate === undefined ? `load: c${connections}, ${closedLoop.reason}` : `load: open loop at ${rate}/s`);
const loadgen = LoadGen.start(pinning.load);

/** Load for `duration` seconds; the requests answered 200. */
async function load(request: RequestSpec, duration: number): Promise<number> {
  if (rate !== undefined) {
    const r = await loadgen.run<OpenResult>({
      kind: 'open',
      request,
      rate,
      warmupSec: 0,
      durationSec: duration,
    });
    log(
      `  ${fmt(r.achievedRate)} answered/s, p99 ${fmt(r.latency.p99, 2)} ms, non-200 ${r.non200}, failed ${r.errors}`,
    );
    return r.ok;
  }
  const r = await loadgen.run<ClosedResult>({
    kind: 'closed',
    generator: closedLoop.generator,
    request,
    connections,
    warmupSec: 0,
    durationSec: duration,
    cpu: [],
  });
  log(`  ${fmt(r.rps)} req/s, non-200 ${r.non200}, failed ${r.errors}`);
  return r.ok;
}

try {
  for (const name of targets) {
    const temp = tempDir(`profile-${name}`);
    const dir = keep ?? temp.dir;
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `${name}.${heap ? 'heapprofile' : 'cpuprofile'}`);
    try {
      const target = await startTarget(name, {
        pinning,
        dir: temp.dir,
        pgAdminUrl: flags.string('pg-url') ?? 'postgres://postgres@127.0.0.1:5432/test',
        tollgateEnv: {
          ...flags.env('env'),
          TOLLGATE_PROFILE: heap ? 'heap' : 'cpu',
          TOLLGATE_PROFILE_FILE: file,
        },
        nodeOptions: `--import=${SAMPLER}`,
      });
      let requests: number;
      try {
        log(`${PROFILED[name]}: ${warmup} s of warm-up`);
        if (warmup > 0) await load(target.request, warmup);
        process.kill(target.pid, 'SIGUSR2');
        log(`${PROFILED[name]}: ${seconds} s profiled`);
        requests = await load(target.request, seconds);
        process.kill(target.pid, 'SIGUSR2');
        for (let i = 0; i < 100 && !existsSync(file); i++) await new Promise((r) => setTimeout(r, 100));
      } finally {
        await target.stop();
      }
      if (!existsSync(file)) throw new Error(`${PROFILED[name]}: no profile written`);
      const profile = heap ? readHeapProfile(file) : readCpuProfile(file);
      process.stdout.write(`\n${PROFILED[name]}\n${report(profile, requests)}\n`);
      if (keep) process.stdout.write(`profile: ${file}\n`);
    } finally {
      temp.remove();
    }
  }
} finally {
  await loadgen.close();
  await cleanupAll();
}

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  /** Samples (CPU profile), or bytes allocated there (heap profile). */
  hitCount: number;
  children?: number[];
}

/** `file://…` as a path from the repository's root; anything else as it is. */
function where(url: string): string {
  return url.startsWith('file://') ? relative(ROOT, url.slice(7)) : url;
}

/** The project's functions by inclusive share, then files or packages and functions by self share. */
function report(profile: { nodes: Node[] }, requests: number): string {
  const total = profile.nodes.reduce((s, n) => s + n.hitCount, 0);
  const byFunction = new Map<string, number>();
  const byFile = new Map<string, number>();
  for (const n of profile.nodes) {
    const { functionName, url, lineNumber } = n.callFrame;
    const at = where(url) || '(native)';
    const fn = `${functionName || '(anonymous)'} ${at}:${lineNumber + 1}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + n.hitCount);
    const owner = at.includes('node_modules/')
      ? at.replace(/^.*node_modules\/((@[^/]+\/)?[^/]+).*$/, 'npm:$1')
      : at.startsWith('src/') || at.startsWith('dist/') || at.startsWith('node:')
        ? at
        : functionName.startsWith('(')
          ? functionName
          : at;
    byFile.set(owner, (byFile.get(owner) ?? 0) + n.hitCount);
  }
  // Inclusive: each function's samples plus those of everything it called (counted once per stack).
  const nodeById = new Map(profile.nodes.map((n) => [n.id, n]));
  const parentOf = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parentOf.set(c, n.id);
  const inclusive = new Map<string, number>();
  for (const n of profile.nodes) {
    if (n.hitCount === 0) continue;
    const seen = new Set<string>();
    for (let id: number | undefined = n.id; id !== undefined; id = parentOf.get(id)) {
      const f = nodeById.get(id)?.callFrame;
      if (!f) break;
      const name = `${f.functionName || '(anonymous)'} ${where(f.url)}:${f.lineNumber + 1}`;
      if (seen.has(name)) continue;
      seen.add(name);
      inclusive.set(name, (inclusive.get(name) ?? 0) + n.hitCount);
    }
  }
  const ours = flags.boolean('all')
    ? inclusive
    : new Map([...inclusive].filter(([k]) => /(src|dist)\//.test(k)));
  const perRequest = (v: number) => `${(v / Math.max(1, requests)).toFixed(0).padStart(6)} B/req`;
  const top = (m: Map<string, number>, n: number) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(
        ([k, v]) => `${((100 * v) / total).toFixed(1).padStart(5)}%${heap ? ` ${perRequest(v)}` : ''}  ${k}`,
      )
      .join('\n');
  const what = heap ? 'bytes allocated' : 'time';
  const unit = heap ? `${(total / 1e6).toFixed(1)} MB sampled` : `${total} samples`;
  return [
    `${requests} requests answered while profiling${heap ? `: ${perRequest(total).trim()} allocated` : ''}`,
    `\ninclusive ${what} of the ${flags.boolean('all') ? '' : "project's "}functions\n${top(ours, 40)}`,
    `\nself ${what} by file or package (${unit})\n${top(byFile, 30)}`,
    `\nself ${what} by function\n${top(byFunction, 40)}`,
  ].join('\n');
}

function readCpuProfile(file: string): { nodes: Node[] } {
  return JSON.parse(readFileSync(file, 'utf8')) as { nodes: Node[] };
}

interface HeapNode {
  id: number;
  callFrame: Node['callFrame'];
  selfSize: number;
  children: HeapNode[];
}

/** The sampling heap profile as CPU-profile nodes whose "hits" are the bytes allocated there. */
function readHeapProfile(file: string): { nodes: Node[] } {
  const { head } = JSON.parse(readFileSync(file, 'utf8')) as { head: HeapNode };
  const nodes: Node[] = [];
  const walk = (n: HeapNode): void => {
    nodes.push({
      id: n.id,
      callFrame: n.callFrame,
      hitCount: n.selfSize,
      children: n.children.map((c) => c.id),
    });
    for (const c of n.children) walk(c);
  };
  walk(head);
  return { nodes };
}
