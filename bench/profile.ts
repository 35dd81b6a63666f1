/**
 * `npm run bench:profile`: one Tollgate (SQLite) process under c50 load for a few seconds with V8's CPU
 * profiler on, then the functions and files with the most self time. The profile itself is kept
 * (`--keep DIR`) for Chrome DevTools. This is how docs/performance.md's optimisations were chosen. The load
 * comes from the benchmark's closed-loop client (wrk when it is on PATH; `--generator autocannon`), or with
 * `--rate N` from its open-loop client at N requests/s. With `--heap` it is an allocation profile instead,
 * after a warm-up (`--warmup S`, default 3), in bytes per answered request (`bench/heap-sampler.mjs`).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import autocannon from 'autocannon';
import { createKey } from '../src/auth/keys.js';
import { CATALOG, envNameOf } from '../src/providers/catalog.js';
import { openStore } from '../src/store/index.js';
import type { OpenResult } from './loadgen.js';
import { readFlags } from './options.js';
import {
  BIN,
  chooseGenerator,
  cleanupAll,
  compileChildScripts,
  detectPinning,
  GENERATOR_FLAG,
  LoadGen,
  NO_PIN_FLAG,
  pinSelf,
  ROOT,
  SIMULATOR_MAIN,
  startProcess,
} from './processes.js';
import { BENCH_CREDIT_NANO, chatBody, simBaseUrl } from './targets.js';
import { WrkRun } from './wrk.js';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount: number;
  children?: number[];
}

const flags = readFlags('npm run bench:profile --', {
  duration: { type: 'string', help: 'seconds of profiled load (default 8)' },
  keep: { type: 'string', help: 'directory to keep the .cpuprofile / .heapprofile in' },
  generator: GENERATOR_FLAG,
  heap: {
    type: 'boolean',
    help: 'where the bytes are allocated (sampling heap profiler) instead of the time',
  },
  warmup: { type: 'string', help: 'seconds of load before the heap profile starts (default 3)' },
  rate: { type: 'string', help: 'an open loop at this many requests/s instead of the closed loop' },
  'no-pin': NO_PIN_FLAG,
});
const seconds = flags.number('duration', 8) || 8;
const keep = flags.string('keep');
/** `--heap`: where the bytes are allocated (V8's sampling heap profiler) instead of where the time goes. */
const heap = flags.boolean('heap');
/** `--warmup S`: seconds of load before the heap profile starts. */
const warmup = flags.number('warmup', 3);
/**
 * `--rate N`: the load is an open loop at N requests/s (the benchmark's fixed-rate and half-maximum phases)
 * instead of the closed loop.
 */
const rate = flags.string('rate') === undefined ? undefined : flags.number('rate', 0);
if (rate !== undefined && !(rate > 0)) {
  console.error('--rate takes a number of requests per second');
  process.exit(2);
}
// The closed loop's client as in `npm run bench`: wrk when it is on PATH, else autocannon.
const { generator, reason } = chooseGenerator(flags.string('generator'));
console.log(rate === undefined ? `load: ${reason}` : `load: open loop at ${rate}/s (bench/loadgen.ts)`);

const dir = mkdtempSync(join(tmpdir(), 'tollgate-profile-'));
// As in `npm run bench`: the gateway alone on CPU 0; the simulator, the load generator and this script on CPU 1.
const pinning = detectPinning(flags.boolean('no-pin'));
pinSelf(pinning.load);
const sim = await startProcess({
  name: 'simulator',
  command: process.execPath,
  args: [SIMULATOR_MAIN, '--port', '0', '--latency-ms', '0'],
  env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
  cpu: pinning.load,
  dir,
});
const env: Record<string, string> = {
  ...process.env,
  // PROFILE_DATABASE_URL profiles another store (an empty PostgreSQL database, say); default a fresh SQLite file.
  DATABASE_URL: process.env.PROFILE_DATABASE_URL ?? `sqlite:${join(dir, 'gw.db')}`,
  PORT: '0',
  HOST: '127.0.0.1',
  LOG_LEVEL: 'warn',
} as Record<string, string>;
for (const p of CATALOG) {
  env[`PROV_${envNameOf(p.name)}_BASE_URL`] = simBaseUrl(sim.url, p);
  env[`PROV_${envNameOf(p.name)}_API_KEY`] = 'upstream-secret';
}
const store = await openStore(env.DATABASE_URL as string);
await store.migrate();
const acct = await store.createAccount({ email: 'profile@example.test', role: 'user', passwordHash: null });
if (!acct.ok) throw new Error('account');
await store.addCredit({ accountId: acct.account.id, amountNano: BENCH_CREDIT_NANO, note: null });
const key = await createKey(store, acct.account.id, 'profile');
if (!key.ok) throw new Error('key');
await store.close();

const profDir = keep ?? join(dir, 'prof');
const heapFile = join(profDir, 'allocations.heapprofile');
if (heap) mkdirSync(profDir, { recursive: true });
const nodeArgs = heap
  ? ['--import', pathToFileURL(join(ROOT, 'bench', 'heap-sampler.mjs')).href, BIN, 'serve', '--json']
  : ['--cpu-prof', `--cpu-prof-dir=${profDir}`, BIN, 'serve', '--json'];
if (heap) env.TOLLGATE_HEAP_PROFILE = heapFile;
const [command, args] =
  pinning.target === undefined
    ? [process.execPath, nodeArgs]
    : ['taskset', ['-c', pinning.target, process.execPath, ...nodeArgs]];
const child = spawn(command, args, {
  env,
  stdio: ['ignore', 'pipe', 'inherit'],
});
const url = await new Promise<string>((resolve, reject) => {
  let out = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    const line = out.split('\n').find((l) => l.includes('"url"'));
    if (line) resolve((JSON.parse(line) as { url: string }).url);
  });
  child.once('exit', (code) => reject(new Error(`server exited ${code}`)));
});
// The simulator records every request (for the tests): clear it as the benchmark does, or it slows down.
const resetTimer = setInterval(() => {
  fetch(`${sim.url}/__sim/reset`, { method: 'POST' }).catch(() => {});
}, 1_000);
const connections = Number(process.env.PROFILE_CONNECTIONS ?? 50);
const headers = { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' };
const completionsUrl = `${url}/api/v1/chat/completions`;
const body = chatBody('prov-deepseek');

let loadgen: LoadGen | undefined;
/** c`connections` (or the open loop of `--rate`) for `duration` seconds; the answered requests (2xx). */
async function load(duration: number): Promise<number> {
  if (rate !== undefined) {
    if (!loadgen) {
      compileChildScripts();
      loadgen = LoadGen.start(pinning.load);
    }
    const request = { url: completionsUrl, method: 'POST' as const, headers, body };
    const r = await loadgen.run<OpenResult>({
      kind: 'open',
      request,
      rate,
      warmupSec: 0,
      durationSec: duration,
    });
    console.log(
      `open loop at ${rate}/s: ${Math.round(r.achievedRate)} answered/s, p99 ${r.latency.p99.toFixed(2)} ms, non-200 ${r.non200}, failed ${r.errors}`,
    );
    return r.ok;
  }
  if (generator.kind === 'wrk') {
    const run = new WrkRun(generator.path, { url: completionsUrl, method: 'POST', headers, body });
    try {
      const r = await run.run(connections, duration);
      const failed = r.connect + r.read + r.write + r.timeout;
      console.log(
        `${Math.round(r.requests / (r.durationUs / 1e6))} req/s, status ≥ 400: ${r.status}, socket errors ${failed}`,
      );
      return r.requests - r.status;
    } finally {
      run.dispose();
    }
  }
  const result = await autocannon({
    url: completionsUrl,
    method: 'POST',
    connections,
    duration,
    headers,
    body,
  });
  console.log(
    `${Math.round(result.requests.average)} req/s, non-2xx ${result.non2xx}, errors ${result.errors}`,
  );
  return result.requests.total - result.non2xx - result.errors;
}

let requests = 0;
if (heap) {
  // Warm up first, so the profile is of the steady state, not of start-up and the compilers' first passes
  // (`--warmup S`, default 3; an open loop at a low rate takes longer: docs/performance.md, twenty-fourth round).
  await load(warmup);
  child.kill('SIGUSR2');
  requests = await load(seconds);
  child.kill('SIGUSR2');
  for (let i = 0; i < 100 && !existsSync(heapFile); i++) await new Promise((r) => setTimeout(r, 100));
} else {
  requests = await load(seconds);
}
await loadgen?.close();
const exited = new Promise((r) => child.once('exit', r));
child.kill('SIGTERM');
await exited;
clearInterval(resetTimer);
await sim.stop();
await cleanupAll();

const profile = heap ? readHeapProfile(heapFile) : readCpuProfile(profDir);
const total = profile.nodes.reduce((s, n) => s + n.hitCount, 0);
const byFunction = new Map<string, number>();
const byFile = new Map<string, number>();
for (const n of profile.nodes) {
  const { functionName, url: u, lineNumber } = n.callFrame;
  const where = u.startsWith('file://') ? relative(ROOT, u.slice(7)) : u || '(native)';
  const fn = `${functionName || '(anonymous)'} ${where}:${lineNumber + 1}`;
  byFunction.set(fn, (byFunction.get(fn) ?? 0) + n.hitCount);
  const pkg = where.includes('node_modules/')
    ? where.replace(/^.*node_modules\/((@[^/]+\/)?[^/]+).*$/, 'npm:$1')
    : where.startsWith('src/') || where.startsWith('dist/')
      ? where
      : where.startsWith('node:')
        ? where
        : functionName.startsWith('(')
          ? functionName
          : where;
  byFile.set(pkg, (byFile.get(pkg) ?? 0) + n.hitCount);
}
/** Bytes per answered request, for the allocation profile. */
const perRequest = (v: number) => `${(v / Math.max(1, requests)).toFixed(0).padStart(6)} B/req`;
const top = (m: Map<string, number>, n: number) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, v]) => `${((100 * v) / total).toFixed(1).padStart(5)}%${heap ? ` ${perRequest(v)}` : ''}  ${k}`)
    .join('\n');
// Inclusive time: each function's samples plus those of everything it called (counted once per stack).
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
    const where = f.url.startsWith('file://') ? relative(ROOT, f.url.slice(7)) : f.url;
    const name = `${f.functionName || '(anonymous)'} ${where}:${f.lineNumber + 1}`;
    if (seen.has(name)) continue;
    seen.add(name);
    inclusive.set(name, (inclusive.get(name) ?? 0) + n.hitCount);
  }
}
const ours = process.env.PROFILE_ALL
  ? inclusive
  : new Map([...inclusive].filter(([k]) => /(src|dist)\//.test(k)));
const what = heap ? 'bytes allocated' : 'time';
if (heap) {
  console.log(`\n${requests} requests answered while sampling: ${perRequest(total).trim()} allocated`);
}
console.log(`\ninclusive ${what} of the project's functions\n${top(ours, 40)}`);
const unit = heap ? `${(total / 1e6).toFixed(1)} MB sampled` : `${total} samples`;
console.log(`\nself ${what} by file or package (${unit})\n${top(byFile, 30)}`);
console.log(`\nself ${what} by function\n${top(byFunction, 40)}`);
if (!keep) rmSync(dir, { recursive: true, force: true });

/** The main thread's CPU profile: one is written per thread (the SQLite checkpoint worker's is smaller). */
function readCpuProfile(from: string): { nodes: Node[] } {
  const file = readdirSync(from)
    .filter((f) => f.endsWith('.cpuprofile'))
    .sort((a, b) => statSync(join(from, b)).size - statSync(join(from, a)).size)[0];
  if (!file) throw new Error('no profile written');
  return JSON.parse(readFileSync(join(from, file), 'utf8')) as { nodes: Node[] };
}

interface HeapNode {
  id: number;
  callFrame: Node['callFrame'];
  selfSize: number;
  children: HeapNode[];
}

/** The sampling heap profile as CPU-profile nodes whose "hits" are the bytes allocated there. */
function readHeapProfile(file: string): { nodes: Node[] } {
  if (!existsSync(file)) throw new Error('no allocation profile written');
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
