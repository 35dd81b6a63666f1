/**
 * `npm run bench:profile`: one Tollgate (SQLite) process under c50 load for a few seconds with V8's CPU
 * profiler on, then the functions and files with the most self time. The profile itself is kept
 * (`--keep DIR`) for Chrome DevTools. This is how docs/performance.md's optimisations were chosen. The load
 * comes from the benchmark's closed-loop client (wrk when it is on PATH; `--generator autocannon`).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import autocannon from 'autocannon';
import { createKey } from '../src/auth/keys.js';
import { CATALOG, envNameOf } from '../src/providers/catalog.js';
import { openStore } from '../src/store/index.js';
import {
  BIN,
  chooseGenerator,
  cleanupAll,
  detectPinning,
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

const seconds = Number(process.argv[process.argv.indexOf('--duration') + 1] || 0) || 8;
const keepIdx = process.argv.indexOf('--keep');
const keep = keepIdx > 0 ? process.argv[keepIdx + 1] : undefined;
const generatorIdx = process.argv.indexOf('--generator');
// The closed loop's client as in `npm run bench`: wrk when it is on PATH, else autocannon.
const { generator, reason } = chooseGenerator(generatorIdx > 0 ? process.argv[generatorIdx + 1] : undefined);
console.log(`load: ${reason}`);

const dir = mkdtempSync(join(tmpdir(), 'tollgate-profile-'));
// As in `npm run bench`: the gateway alone on CPU 0; the simulator, the load generator and this script on CPU 1.
const pinning = detectPinning(process.argv.includes('--no-pin'));
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
const nodeArgs = ['--cpu-prof', `--cpu-prof-dir=${profDir}`, BIN, 'serve', '--json'];
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
if (generator.kind === 'wrk') {
  const run = new WrkRun(generator.path, {
    url: completionsUrl,
    method: 'POST',
    headers,
    body,
  });
  try {
    const r = await run.run(connections, seconds);
    const failed = r.connect + r.read + r.write + r.timeout;
    console.log(
      `${Math.round(r.requests / (r.durationUs / 1e6))} req/s, status ≥ 400: ${r.status}, socket errors ${failed}`,
    );
  } finally {
    run.dispose();
  }
} else {
  const result = await autocannon({
    url: completionsUrl,
    method: 'POST',
    connections,
    duration: seconds,
    headers,
    body,
  });
  console.log(
    `${Math.round(result.requests.average)} req/s, non-2xx ${result.non2xx}, errors ${result.errors}`,
  );
}
const exited = new Promise((r) => child.once('exit', r));
child.kill('SIGTERM');
await exited;
clearInterval(resetTimer);
await sim.stop();
await cleanupAll();

// One profile per thread (the main one and the SQLite checkpoint worker): the main thread's is the largest.
const file = readdirSync(profDir)
  .filter((f) => f.endsWith('.cpuprofile'))
  .sort((a, b) => statSync(join(profDir, b)).size - statSync(join(profDir, a)).size)[0];
if (!file) throw new Error('no profile written');
const profile = JSON.parse(readFileSync(join(profDir, file), 'utf8')) as { nodes: Node[] };
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
const top = (m: Map<string, number>, n: number) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, v]) => `${((100 * v) / total).toFixed(1).padStart(5)}%  ${k}`)
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
console.log(`\ninclusive time of the project's functions\n${top(ours, 40)}`);
console.log(`\nself time by file or package (${total} samples)\n${top(byFile, 30)}`);
console.log(`\nself time by function\n${top(byFunction, 40)}`);
if (!keep) rmSync(dir, { recursive: true, force: true });
