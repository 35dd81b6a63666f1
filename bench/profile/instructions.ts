/**
 * `npm run bench:profile -- --mode instructions`: CPU instructions per request, counted instead of timed.
 *
 * On a shared virtual machine timed runs move by more than a small change does. Instructions move far
 * less: each process (the bare proxy and Tollgate on SQLite by default) runs under `valgrind
 * --tool=callgrind` with counting off; after `--warmup` requests counting is switched on, `--requests`
 * requests are sent at `--connections`, and the count of the main thread is read. V8's compiler threads
 * are left out (see newestMainDump). The count still moves from start to start with which code V8 keeps
 * in which tier (`--functions` shows it), and hours apart with the group commit sizes, which follow how
 * fast the slowed-down process runs beside the simulator: compare A and B interleaved, several of each
 * (`--only sqlite,sqlite` counts two fresh starts). The share spent inside better-sqlite3 moves far less,
 * and measures a change to the store's statements or schema on its own. Kernel work (socket and file
 * system calls) is not counted: the timed benchmark remains the authority, this one says which way a
 * change moves the process's own code. Writes `bench/results/instructions-<ISO time>.json`; `--keep DIR`
 * keeps the dumps for `callgrind_annotate`.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Pool } from 'undici';
import type { RequestSpec } from '../loadgen.js';
import { readFlags } from '../options.js';
import { cleanupAll, compileChildScripts, detectPinning, ROOT, requireTool } from '../processes.js';
import { fmt, machineInfo, table, writeResults } from '../report.js';
import { TARGET_LABELS } from '../target-names.js';
import { startTarget, tempDir } from '../targets.js';
import { betterSqliteInstructions, parsePerfMap, selfCountsByFunction } from './callgrind-listing.js';
import { MODE_FLAG, scriptName } from './modes.js';

const COUNTED = {
  bare: TARGET_LABELS.bare,
  sqlite: TARGET_LABELS.sqlite,
  postgres: TARGET_LABELS.postgres,
} as const;
type Counted = keyof typeof COUNTED;

const flags = readFlags(scriptName('instructions'), {
  mode: MODE_FLAG,
  only: {
    type: 'string',
    help: 'comma-separated targets: bare, sqlite, postgres; one may repeat (default bare,sqlite)',
  },
  'pg-url': {
    type: 'string',
    help: 'PostgreSQL admin URL for the postgres target (default postgres://postgres@127.0.0.1:5432/test)',
  },
  requests: { type: 'string', help: 'requests counted per target (default 3000)' },
  warmup: { type: 'string', help: 'requests before counting starts (default 6000)' },
  connections: { type: 'string', help: 'concurrent requests (default 50)' },
  accounts: {
    type: 'string',
    help: "accounts (one key each) Tollgate's requests are spread over, request by request (default 1)",
  },
  keep: { type: 'string', help: 'copy the callgrind dumps to this directory (for callgrind_annotate)' },
  env: {
    type: 'string',
    help: "Tollgate's extra environment, e.g. METRICS_ENABLED=false,SQLITE_SYNCHRONOUS=FULL",
  },
  functions: {
    type: 'string',
    help: "print Tollgate's N functions with the most instructions of their own per request, JavaScript named from V8's perf map",
  },
});

const targets: Counted[] = flags.choices('only', COUNTED, ['bare', 'sqlite']);
const requests = Math.max(100, flags.number('requests', 3000));
// Fewer warm-up requests leave V8 still optimising while counting: more instructions per request, and a
// noisier A/B.
const warmup = flags.number('warmup', 6000);
const keep = flags.string('keep');
const connections = Math.max(1, flags.number('connections', 50));
const accounts = Math.max(1, Math.round(flags.number('accounts', 1)));
const topFunctions = Math.max(0, Math.round(flags.number('functions', 0)));
// V8 names its JIT code in /tmp/perf-<pid>.map only with --perf-basic-prof (callgrind sees addresses).
const extraEnv = flags.env('env');
const tollgateEnv =
  topFunctions > 0
    ? { ...extraEnv, NODE_OPTIONS: `${extraEnv.NODE_OPTIONS ?? ''} --perf-basic-prof`.trim() }
    : extraEnv;

requireTool(scriptName('instructions'), 'valgrind', 'apt-get install -y valgrind');

/** Sends `count` requests, `connections` at a time; throws unless every one is answered 200. */
async function send(spec: RequestSpec, count: number): Promise<void> {
  const url = new URL(spec.url);
  const pool = new Pool(url.origin, { connections, headersTimeout: 600_000, bodyTimeout: 600_000 });
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      const i = next++;
      const headers = { ...spec.headers };
      const auths = spec.authorizations;
      if (auths && auths.length > 0) headers.authorization = auths[i % auths.length] as string;
      const res = await pool.request({ path: url.pathname, method: 'POST', headers, body: spec.body });
      const text = await res.body.text();
      if (res.statusCode !== 200) throw new Error(`answered ${res.statusCode}: ${text.slice(0, 200)}`);
    }
  };
  try {
    await Promise.all(Array.from({ length: connections }, worker));
  } finally {
    await pool.close();
  }
}

/**
 * valgrind names its control pipes after the process's HOST variable, and Tollgate is started with
 * HOST=127.0.0.1 (its listen address): callgrind_control finds them only with the same HOST.
 */
function callgrindControl(name: Counted, args: string[]): void {
  const env = { ...process.env };
  if (name === 'sqlite' || name === 'postgres') env.HOST = '127.0.0.1';
  else delete env.HOST;
  execFileSync('callgrind_control', args, { stdio: 'ignore', env });
}

/** callgrind_control returns once the command is sent; the process acts on it at its next poll. */
async function waitFor<T>(what: string, read: () => T | undefined, timeoutMs = 120_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The newest dump of process `pid`'s main thread, once it is written. */
function newestMainDump(dir: string, name: string, pid: number): string | undefined {
  // Dumps requested with callgrind_control are `<out-file>.<n>-<thread>`; thread 01 is the main thread
  // (the event loop). V8's compiler threads are left out: they still optimise long after a warm-up that is
  // slow under valgrind, and by how much varies from run to run.
  const prefix = `cg.${name}.${pid}.`;
  const last = readdirSync(dir)
    .filter((f) => f.startsWith(prefix) && f.endsWith('-01'))
    .sort((a, b) => Number.parseInt(a.slice(prefix.length), 10) - Number.parseInt(b.slice(prefix.length), 10))
    .at(-1);
  return last === undefined ? undefined : join(dir, last);
}

/** The `summary:` (or `totals:`) line of the newest dump of process `pid`, once it is written. */
function dumpedInstructions(dir: string, name: string, pid: number): number | undefined {
  const dump = newestMainDump(dir, name, pid);
  if (!dump) return undefined;
  const match = readFileSync(dump, 'utf8').match(/^(?:summary|totals):\s*(\d+)/m);
  return match?.[1] ? Number(match[1]) : undefined;
}

/**
 * Instructions spent inside better-sqlite3 (SQLite and its binding) in the same dump: the inclusive counts
 * of the addon's entry points from JavaScript (betterSqliteInstructions), read with `callgrind_annotate`.
 * Unlike the total it does not move with V8's tiering (which functions run interpreted, and when they are
 * optimised or deoptimised, changes from run to run), so it measures a change to the store's statements
 * or schema finely. `undefined` when the process has no such frames or callgrind_annotate is missing.
 */
function sqliteInstructions(dir: string, name: string, pid: number): number | undefined {
  const dump = newestMainDump(dir, name, pid);
  if (!dump) return undefined;
  let listing: string;
  try {
    listing = execFileSync('callgrind_annotate', ['--inclusive=yes', '--threshold=100', dump], {
      encoding: 'utf8',
      maxBuffer: 256 * 1024 * 1024,
    });
  } catch {
    return undefined;
  }
  return betterSqliteInstructions(listing);
}

/**
 * The `top` functions of the main thread's dump by their own (exclusive) instructions per request, with
 * JavaScript named from the process's perf map (`--functions`): which code the count goes to, and in which
 * of V8's tiers it ran (a count is higher when parts of Node's and undici's code stay in the baseline
 * tier). Removes the map and the log V8 leaves with it.
 */
function printTopFunctions(dir: string, name: Counted, pid: number, top: number): void {
  const dump = newestMainDump(dir, name, pid);
  const mapFile = `/tmp/perf-${pid}.map`;
  try {
    if (!dump) return;
    const listing = execFileSync('callgrind_annotate', ['--threshold=100', dump], {
      encoding: 'utf8',
      maxBuffer: 256 * 1024 * 1024,
    });
    const counts = selfCountsByFunction(listing, parsePerfMap(readFileSync(mapFile, 'utf8')));
    const rowsOut = [...counts].sort((a, b) => b[1] - a[1]).slice(0, top);
    process.stdout.write(
      `\n${COUNTED[name]}: the ${top} functions with the most instructions of their own per request\n${table(
        ['instructions/req', 'function'],
        rowsOut.map(([fn, count]) => [fmt(count / requests), fn.slice(0, 140)]),
      )}\n`,
    );
  } finally {
    rmSync(mapFile, { force: true });
    for (const f of readdirSync(ROOT)) {
      if (f.startsWith('isolate-') && f.endsWith(`-${pid}-v8.log`)) rmSync(join(ROOT, f), { force: true });
    }
  }
}

const startedAt = new Date();
const temp = tempDir('tollgate-instructions-');
compileChildScripts();
const rows: { target: Counted; instructionsPerRequest: number; sqlitePerRequest?: number }[] = [];

try {
  for (const name of targets) {
    process.stderr.write(`${COUNTED[name]}: starting under callgrind (slow)…\n`);
    const wrap = [
      'valgrind',
      '--tool=callgrind',
      '--instr-atstart=no',
      '--separate-threads=yes',
      '--dump-instr=no',
      '--dump-line=no',
      `--callgrind-out-file=${join(temp.dir, `cg.${name}.%p`)}`,
    ];
    const target = await startTarget(name, {
      pinning: detectPinning(true),
      // A directory of its own per start: `--only sqlite,sqlite` counts two fresh databases.
      dir: mkdtempSync(join(temp.dir, `${name}-`)),
      pgAdminUrl: flags.string('pg-url') ?? 'postgres://postgres@127.0.0.1:5432/test',
      tollgateEnv,
      wrap,
      accounts,
    });
    try {
      process.stderr.write(`${COUNTED[name]}: ${warmup} warm-up requests…\n`);
      await send(target.request, warmup);
      callgrindControl(name, ['--instr=on', String(target.pid)]);
      process.stderr.write(`${COUNTED[name]}: ${requests} counted requests at c${connections}…\n`);
      await send(target.request, requests);
      callgrindControl(name, ['--dump', String(target.pid)]);
      callgrindControl(name, ['--instr=off', String(target.pid)]);
      const counted = await waitFor(`the callgrind dump of ${name}`, () =>
        dumpedInstructions(temp.dir, name, target.pid),
      );
      const perRequest = counted / requests;
      const inSqlite = sqliteInstructions(temp.dir, name, target.pid);
      rows.push({
        target: name,
        instructionsPerRequest: perRequest,
        ...(inSqlite === undefined ? {} : { sqlitePerRequest: inSqlite / requests }),
      });
      process.stderr.write(
        `${COUNTED[name]}: ${fmt(perRequest)} instructions per request${
          inSqlite === undefined ? '' : `, ${fmt(inSqlite / requests)} of them in better-sqlite3`
        }\n`,
      );
      if (topFunctions > 0 && (name === 'sqlite' || name === 'postgres')) {
        printTopFunctions(temp.dir, name, target.pid, topFunctions);
      }
    } finally {
      await target.stop();
      if (keep) {
        mkdirSync(keep, { recursive: true });
        for (const f of readdirSync(temp.dir)) {
          if (f.startsWith(`cg.${name}.`)) copyFileSync(join(temp.dir, f), join(keep, f));
        }
      }
    }
  }
} finally {
  await cleanupAll();
  temp.remove();
}

const bare = rows.find((r) => r.target === 'bare')?.instructionsPerRequest;
process.stdout.write(
  `\nInstructions per request (user space, callgrind), ${requests} requests at c${connections} after ${warmup}\n${table(
    ['target', 'instructions/req', '×bare', 'in better-sqlite3'],
    rows.map((r) => [
      COUNTED[r.target],
      fmt(r.instructionsPerRequest),
      bare ? fmt(r.instructionsPerRequest / bare, 2) : '—',
      r.sqlitePerRequest === undefined ? '—' : fmt(r.sqlitePerRequest),
    ]),
  )}\n`,
);
const file = writeResults(
  'instructions-',
  { machine: machineInfo(), requests, warmup, connections, accounts, tollgateEnv, rows },
  startedAt,
);
process.stdout.write(`JSON: ${file}\n`);
