/**
 * `npm run bench:stream` — what Tollgate adds to a streamed answer, beside the bare streaming proxy, each
 * with a fresh upstream streaming `--chunks` pieces at `--rate` a second; the client is this process.
 * Phases: latency (TTFB and gaps between events, `--latency-streams` at a time) and concurrency
 * (`--streams` open at once: errors, peak RSS, and Tollgate's bills against its balances' fall and
 * `ledger check`). Writes `bench/results/stream-<ISO time>.json`. Method: docs/performance.md.
 */
import { spawnSync } from 'node:child_process';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Pool } from 'undici';
import { readFlags } from './options.js';
import { allowedCpus, busyShare, cpuTimeUs, rssKb } from './proc-stats.js';
import { BIN, baseEnv, NO_PIN_FLAG, type Pinning, runScript } from './processes.js';
import { fmt, machineInfo, renderGoals, table, writeResults } from './report.js';
import { type LatencySummary, Samples, sleep } from './stats.js';
import {
  added,
  type PhaseFigures,
  readEnding,
  StreamTimer,
  streamGoals,
  usdToNano,
} from './stream-measure.js';
import { startTarget, TINY_MESSAGES, tempDir } from './targets.js';

const TARGETS = { bare: 'bare streaming proxy', sqlite: 'Tollgate · SQLite' } as const;
type StreamTargetName = keyof typeof TARGETS;

const flags = readFlags('npm run bench:stream --', {
  streams: { type: 'string', help: 'streams open at once in the concurrency phase (default 1000)' },
  chunks: { type: 'string', help: 'content chunks of each streamed answer (default 50)' },
  rate: { type: 'string', help: 'chunks per second of each stream (default 20)' },
  requests: { type: 'string', help: 'streams measured in the latency phase (default 100)' },
  'latency-streams': { type: 'string', help: 'streams open at once in the latency phase (default 10)' },
  warmup: { type: 'string', help: 'streams before the latency phase, not timed (default 20)' },
  hold: {
    type: 'string',
    help: 'seconds the concurrency phase keeps starting streams, each slot its next as one ends (default 10)',
  },
  accounts: {
    type: 'string',
    help: "accounts (one key each) Tollgate's streams are spread over, stream by stream (default 10)",
  },
  only: { type: 'string', help: `comma-separated targets (${Object.keys(TARGETS).join(',')})` },
  'no-pin': NO_PIN_FLAG,
  env: { type: 'string', help: "Tollgate's extra environment, e.g. SQLITE_CHECKPOINT=inline" },
});

const whole = (name: string, fallback: number, min = 1) =>
  Math.max(min, Math.round(flags.number(name, fallback)));
const options = {
  streams: whole('streams', 1000),
  chunks: whole('chunks', 50),
  rate: flags.number('rate', 20),
  requests: whole('requests', 100),
  latencyStreams: whole('latency-streams', 10),
  warmup: whole('warmup', 20, 0),
  holdSec: flags.number('hold', 10),
  accounts: whole('accounts', 10),
};
const targets = flags.choices('only', TARGETS, ['bare', 'sqlite']);
/** Enough words that every chunk carries some text (the simulator cuts no finer than a character). */
const replyWords = Math.max(40, options.chunks);
/** A cap the reply never reaches, so each answer is streamed whole. */
const maxTokens = replyWords * 4 + 64;
/** Nominal length of one stream, ms: its chunks at the pace. */
const streamMs = options.rate > 0 ? (options.chunks / options.rate) * 1000 : 0;

/** Per-key limits and body caps off (every stream comes from one address), room for every stream. */
const tollgateEnv: Record<string, string> = {
  STREAMING: 'on',
  KEY_MAX_CONCURRENT: '0',
  KEY_RATE_LIMIT_RPM: '0',
  KEY_MAX_PENDING_BODIES: '0',
  ADDRESS_MAX_PENDING_BODIES: '0',
  MAX_CONCURRENT_REQUESTS: String(Math.max(4096, 2 * (options.streams + options.latencyStreams))),
  ...flags.env('env'),
};

let log: (line: string) => void = () => {};

// ── targets ──────────────────────────────────────────────────────────────────

/** With the usage chunk, which Tollgate asks its upstream for anyway: both upstreams stream the same. */
function streamBody(model: string): string {
  return JSON.stringify({
    model,
    messages: TINY_MESSAGES,
    max_tokens: maxTokens,
    stream: true,
    stream_options: { include_usage: true },
  });
}

/** A target of `npm run bench` whose upstream streams at the pace given at its start. */
async function startStreamTarget(name: StreamTargetName, pinning: Pinning, dir: string) {
  const running = await startTarget(name, {
    pinning,
    dir,
    pgAdminUrl: '',
    accounts: options.accounts,
    tollgateEnv,
    body: streamBody,
    simulatorArgs: [
      ...['--stream-chunks', String(options.chunks), '--stream-chunks-per-second', String(options.rate)],
      ...['--reply-words', String(replyWords)],
    ],
    // One upstream connection per stream in flight, as Tollgate's agent opens.
    bareArgs: ['--stream', '--connections', String(options.streams + options.latencyStreams + 8)],
  });
  const url = new URL(running.request.url);
  const { authorizations, headers, body } = running.request;
  return {
    ...running,
    url: url.origin,
    path: url.pathname,
    /** One per account; stream i uses the (i mod n)-th. */
    authorizations: authorizations ?? [headers.authorization as string],
    body: Buffer.from(body),
  };
}
type StreamTarget = Awaited<ReturnType<typeof startStreamTarget>>;

// ── client ───────────────────────────────────────────────────────────────────

/** What one phase's streams gave; filled as they end. */
class PhaseTally {
  readonly ttfb = new Samples(1 << 12);
  readonly gaps = new Samples(1 << 16);
  readonly durations = new Samples(1 << 12);
  streams = 0;
  errors = 0;
  events = 0;
  readonly errorSamples: string[] = [];
  billedNano = 0;
  withoutBill = 0;

  fail(why: string): void {
    this.errors++;
    if (this.errorSamples.length < 5) this.errorSamples.push(why.slice(0, 300));
  }
}

/** One streamed request, timed as its body arrives (a raw undici dispatch handler: no stream objects). */
function oneStream(pool: Pool, target: StreamTarget, index: number, tally: PhaseTally): Promise<void> {
  return new Promise((resolve) => {
    const sentAt = performance.now();
    const timer = new StreamTimer(sentAt, tally.gaps);
    let status = 0;
    pool.dispatch(
      {
        path: target.path,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: target.authorizations[index % target.authorizations.length] as string,
        },
        body: target.body,
      },
      {
        // The newer handler methods: undici recognizes them by this one.
        onRequestStart: () => undefined,
        onResponseStart: (_controller, statusCode) => {
          status = statusCode;
        },
        onResponseData: (_controller, chunk) => timer.onChunk(chunk, performance.now()),
        onResponseEnd: () => {
          const endedAt = performance.now();
          tally.streams++;
          const tail = timer.tailText();
          const ending = readEnding(tail);
          if (status !== 200) tally.fail(`HTTP ${status}: ${tail.slice(0, 200)}`);
          else if (ending.error !== undefined) tally.fail(`error event: ${ending.error}`);
          else if (!ending.done) tally.fail('the stream ended without data: [DONE]');
          else {
            if (timer.ttfbMs !== undefined) tally.ttfb.add(timer.ttfbMs);
            tally.durations.add(endedAt - sentAt);
            tally.events += timer.events;
          }
          if (target.name === 'sqlite') {
            if (ending.costNano === undefined) tally.withoutBill++;
            else tally.billedNano += ending.costNano;
          }
          resolve();
        },
        onResponseError: (_controller, err) => {
          tally.streams++;
          tally.fail(err.message);
          if (target.name === 'sqlite') tally.withoutBill++;
          resolve();
        },
      },
    );
  });
}

/** `slots` streams at a time while `more()`, the slots' starts spread over one stream's length. */
async function runSlots(
  pool: Pool,
  target: StreamTarget,
  tally: PhaseTally,
  slots: number,
  more: () => boolean,
): Promise<void> {
  let next = 0;
  const spreadMs = Math.max(streamMs, 100);
  const slot = async (k: number) => {
    await sleep((k * spreadMs) / slots);
    while (more()) await oneStream(pool, target, next++, tally);
  };
  await Promise.all(Array.from({ length: slots }, (_, k) => slot(k)));
}

const countdown = (n: number) => () => n-- > 0;
const until = (deadline: number) => () => performance.now() < deadline;

interface PhaseReport extends PhaseFigures {
  phase: 'latency' | 'concurrent';
  slots: number;
  wallSec: number;
  durations: LatencySummary;
  eventsPerStream: number | undefined;
  errorSamples: string[];
  /** The target's share of one CPU, and how busy the load CPU was (0..1). */
  targetCpu: number | undefined;
  loadCpuBusy: number | undefined;
  /** p99 of the client's event-loop delay, ms: inside every figure it times. */
  clientLoopDelayP99Ms: number;
  /** The largest VmRSS sampled every 100 ms over the concurrency phase, MB. */
  peakRssMb?: number;
}

async function runPhase(
  phase: PhaseReport['phase'],
  pool: Pool,
  target: StreamTarget,
  tally: PhaseTally,
  slots: number,
  more: () => boolean,
): Promise<PhaseReport> {
  const targetCpu0 = cpuTimeUs(target.pid);
  const loadBusy = busyShare(allowedCpus());
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  let sampledKb = 0;
  const sampler =
    phase === 'concurrent'
      ? setInterval(() => {
          sampledKb = Math.max(sampledKb, rssKb(target.pid) ?? 0);
        }, 100)
      : undefined;
  const t0 = performance.now();
  try {
    await runSlots(pool, target, tally, slots, more);
  } finally {
    clearInterval(sampler);
    loop.disable();
  }
  const wallUs = (performance.now() - t0) * 1000;
  const share = (a: number | undefined, b: number | undefined) =>
    a === undefined || b === undefined ? undefined : (b - a) / wallUs;
  const completed = tally.streams - tally.errors;
  return {
    phase,
    slots,
    streams: tally.streams,
    errors: tally.errors,
    errorSamples: tally.errorSamples,
    wallSec: wallUs / 1e6,
    ttfb: tally.ttfb.summary(),
    gaps: tally.gaps.summary(),
    durations: tally.durations.summary(),
    eventsPerStream: completed > 0 ? tally.events / completed : undefined,
    targetCpu: share(targetCpu0, cpuTimeUs(target.pid)),
    loadCpuBusy: loadBusy(),
    clientLoopDelayP99Ms: loop.percentile(99) / 1e6,
    ...(sampledKb > 0 ? { peakRssMb: sampledKb / 1024 } : {}),
  };
}

// ── Tollgate's books ─────────────────────────────────────────────────────────

/** The accounts' available balances summed, and their open holds, in nanodollars, via `GET /api/v1/key`. */
async function balances(target: StreamTarget): Promise<{ balanceNano: number; heldNano: number }> {
  let balanceNano = 0;
  let heldNano = 0;
  for (const authorization of target.authorizations) {
    const response = await fetch(`${target.url}/api/v1/key`, { headers: { authorization } });
    const text = await response.text();
    if (response.status !== 200) throw new Error(`GET /api/v1/key answered ${response.status}: ${text}`);
    const body = JSON.parse(text) as { balance: number; held: number };
    balanceNano += usdToNano(body.balance);
    heldNano += usdToNano(body.held);
  }
  return { balanceNano, heldNano };
}

/** `bin/tollgate ledger check --json` on the target's database (the CLI may read while the server runs). */
function ledgerCheck(databaseUrl: string): { ok: boolean; report: unknown } {
  const result = spawnSync(process.execPath, [BIN, 'ledger', 'check', '--json'], {
    env: baseEnv({ DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' }),
    encoding: 'utf8',
    timeout: 120_000,
  });
  let report: unknown = result.stdout;
  try {
    report = JSON.parse(result.stdout);
  } catch {
    report = { stdout: result.stdout.slice(0, 2000), stderr: result.stderr.slice(0, 2000) };
  }
  return { ok: result.status === 0, report };
}

// ── one target ───────────────────────────────────────────────────────────────

interface TargetResult {
  name: StreamTargetName;
  label: string;
  latency?: PhaseReport;
  concurrent?: PhaseReport;
  billing?: {
    billedNano: number;
    balanceChangeNano: number;
    streamsWithoutBill: number;
    heldAfterNano: number;
  };
  ledger?: { ok: boolean; report: unknown };
  error?: string;
}

async function measureTarget(name: StreamTargetName, pinning: Pinning): Promise<TargetResult> {
  const label = TARGETS[name];
  const result: TargetResult = { name, label };
  const temp = tempDir(`stream-${name}`);
  let target: StreamTarget | undefined;
  let pool: Pool | undefined;
  try {
    log(`${label}: starting`);
    target = await startStreamTarget(name, pinning, temp.dir);
    pool = new Pool(target.url, {
      connections: options.streams + options.latencyStreams + 8,
      pipelining: 1,
      keepAliveTimeout: 60_000,
      // undici's default gives up on a connection after 10 s; a client of a chat API waits minutes, so a
      // target slow to accept shows here as time to first byte, not as an error of the client's making.
      connect: { timeout: 120_000 },
    });
    const probe = new PhaseTally();
    await oneStream(pool, target, 0, probe);
    if (probe.errors > 0) throw new Error(`probe stream failed: ${probe.errorSamples[0]}`);
    log(`${label}: probe stream OK, ${probe.events} events in ${fmt(probe.durations.summary().p50, 0)} ms`);

    const before = target.databaseUrl ? await balances(target) : undefined;
    const billed: PhaseTally[] = [];

    if (options.warmup > 0) {
      log(`${label}: warm-up, ${options.warmup} streams`);
      const warm = new PhaseTally();
      billed.push(warm);
      await runSlots(pool, target, warm, options.latencyStreams, countdown(options.warmup));
    }

    const latencyTally = new PhaseTally();
    billed.push(latencyTally);
    log(`${label}: latency, ${options.requests} streams, ${options.latencyStreams} at a time`);
    const more = countdown(options.requests);
    result.latency = await runPhase('latency', pool, target, latencyTally, options.latencyStreams, more);
    log(`${label}: ${summaryLine(result.latency)}`);

    const concurrentTally = new PhaseTally();
    billed.push(concurrentTally);
    log(`${label}: concurrency, ${options.streams} streams at once for ${options.holdSec} s`);
    result.concurrent = await runPhase(
      'concurrent',
      pool,
      target,
      concurrentTally,
      options.streams,
      until(performance.now() + options.holdSec * 1000),
    );
    log(`${label}: ${summaryLine(result.concurrent)}`);

    if (before && target.databaseUrl) {
      const after = await balances(target);
      result.billing = {
        billedNano: billed.reduce((sum, t) => sum + t.billedNano, 0),
        balanceChangeNano: before.balanceNano - after.balanceNano,
        streamsWithoutBill: billed.reduce((sum, t) => sum + t.withoutBill, 0),
        heldAfterNano: after.heldNano,
      };
      result.ledger = ledgerCheck(target.databaseUrl);
      log(
        `${label}: billed ${result.billing.billedNano} n$, balances fell ${result.billing.balanceChangeNano} n$; ledger check ${result.ledger.ok ? 'OK' : 'FAILED'}`,
      );
    }
  } catch (err) {
    result.error = err instanceof Error ? err.message : String(err);
    log(`${label}: FAILED — ${result.error}`);
  } finally {
    await pool?.close().catch(() => undefined);
    await target?.stop().catch(() => undefined);
    temp.remove();
  }
  return result;
}

function summaryLine(p: PhaseReport): string {
  return (
    `${p.phase}: ${p.streams} streams, ${p.errors} errors, TTFB p50 ${fmt(p.ttfb.p50, 2)} ms, ` +
    `gap p99 ${fmt(p.gaps.p99, 2)} ms, target CPU ${pct(p.targetCpu)}, load CPU ${pct(p.loadCpuBusy)}` +
    (p.peakRssMb === undefined ? '' : `, peak RSS ${fmt(p.peakRssMb)} MB`) +
    (p.errorSamples[0] ? ` — first error: ${p.errorSamples[0]}` : '')
  );
}

const pct = (share: number | undefined) => (share === undefined ? '—' : `${(share * 100).toFixed(0)}%`);

// ── report ───────────────────────────────────────────────────────────────────

/** Past this share of the load CPU, or this client event-loop delay, the client's figures time the client. */
const LOAD_CPU_LIMIT = 0.95;
const LOOP_DELAY_LIMIT_MS = 10;
const TARGET_CPU_LIMIT = 0.95;

function renderStreamTable(results: readonly TargetResult[]): string {
  const header =
    'target|phase|open|streams|errors|TTFB p50 ms|p99 ms|gap p50 ms|p99 ms|max ms|stream p50 s|target CPU|load CPU busy|RSS MB'.split(
      '|',
    );
  const rows: string[][] = [];
  for (const r of results) {
    for (const p of [r.latency, r.concurrent]) {
      if (!p) continue;
      rows.push([
        r.label,
        p.phase,
        String(p.slots),
        String(p.streams),
        `${p.errors}${p.errors > 0 ? ' !' : ''}`,
        fmt(p.ttfb.p50, 2),
        fmt(p.ttfb.p99, 2),
        fmt(p.gaps.p50, 2),
        fmt(p.gaps.p99, 2),
        fmt(p.gaps.max, 1),
        fmt(p.durations.p50 / 1000, 2),
        pct(p.targetCpu),
        pct(p.loadCpuBusy),
        fmt(p.peakRssMb),
      ]);
    }
  }
  const text = table(header, rows);
  const failed = results.filter((r) => r.error !== undefined && !r.latency);
  return failed.length === 0
    ? text
    : `${text}\n${failed.map((r) => `${r.label}  failed: ${r.error?.slice(0, 200)}`).join('\n')}`;
}

function notes(results: readonly TargetResult[]): string[] {
  const out: string[] = [];
  for (const r of results) {
    if (r.error !== undefined && r.latency) out.push(`WARNING: ${r.label}: ${r.error}`);
    for (const p of [r.latency, r.concurrent]) {
      if (!p) continue;
      const where = `${r.label}, ${p.phase} (${p.slots} open)`;
      if ((p.loadCpuBusy ?? 0) >= LOAD_CPU_LIMIT || p.clientLoopDelayP99Ms > LOOP_DELAY_LIMIT_MS) {
        out.push(
          `caveat: ${where}: the load CPU was ${pct(p.loadCpuBusy)} busy and the client's event loop lagged ` +
            `${p.clientLoopDelayP99Ms.toFixed(1)} ms at p99: its TTFB and gaps include that wait`,
        );
      }
      if ((p.targetCpu ?? 0) >= TARGET_CPU_LIMIT) {
        out.push(`caveat: ${where}: the target used ${pct(p.targetCpu)} of its CPU: it was the limit`);
      }
      if (streamMs > 0 && p.durations.p50 > streamMs * 1.2) {
        out.push(
          `caveat: ${where}: streams took ${fmt(p.durations.p50 / 1000, 2)} s at p50 against ${(streamMs / 1000).toFixed(2)} s at the upstream's pace`,
        );
      }
      for (const e of p.errorSamples) out.push(`ERROR: ${where}: ${e}`);
    }
  }
  return out;
}

runScript('bench:stream', flags.boolean('no-pin'), async (script) => {
  const { pinning, startedAt } = script;
  log = script.log;
  const machine = machineInfo();
  log(
    `[${targets.join(', ')}]: ${options.chunks} chunks at ${options.rate}/s per stream; latency ` +
      `${options.requests} streams ` +
      `${options.latencyStreams} at a time; concurrency ${options.streams} at once for ${options.holdSec} s`,
  );

  const results: TargetResult[] = [];
  for (const name of targets) results.push(await measureTarget(name, pinning));

  const bare = results.find((r) => r.name === 'bare');
  const tollgate = results.find((r) => r.name === 'sqlite');
  const addedFigures = {
    ttfbP50Ms: added(tollgate?.latency?.ttfb.p50, bare?.latency?.ttfb.p50),
    gapP99Ms: added(tollgate?.latency?.gaps.p99, bare?.latency?.gaps.p99),
    concurrentTtfbP50Ms: added(tollgate?.concurrent?.ttfb.p50, bare?.concurrent?.ttfb.p50),
    concurrentGapP99Ms: added(tollgate?.concurrent?.gaps.p99, bare?.concurrent?.gaps.p99),
  };
  const goals = streamGoals(
    {
      bare: bare?.latency,
      tollgate: tollgate?.latency,
      ...(tollgate?.concurrent
        ? {
            concurrent: {
              streams: tollgate.concurrent.streams,
              errors: tollgate.concurrent.errors,
              peakRssMb: tollgate.concurrent.peakRssMb,
            },
          }
        : {}),
      ...(tollgate?.billing ? { billing: tollgate.billing } : {}),
      ledgerOk: tollgate?.ledger?.ok,
    },
    options.streams,
  );

  process.stdout.write(
    `\nTollgate streaming benchmark — ${options.chunks} chunks at ${options.rate}/s per stream, one run\n`,
  );
  process.stdout.write(`${renderStreamTable(results)}\n\n`);
  process.stdout.write(
    'open: streams at once · TTFB: send to the first data: bytes · gap: between consecutive events at the ' +
      'client (0 within one read) · stream: send to the end · target CPU: ' +
      "its share of one CPU over the phase · load CPU busy: how busy the client's and upstream's CPU was, " +
      'any process counted · RSS: largest VmRSS sampled every 100 ms\n\n',
  );
  const signedMs = (v: number | undefined) =>
    v === undefined ? '—' : `${v >= 0 ? '+' : ''}${v.toFixed(2)} ms`;
  process.stdout.write(
    `Added by Tollgate over the bare proxy: latency phase TTFB p50 ${signedMs(addedFigures.ttfbP50Ms)}, gap p99 ${signedMs(addedFigures.gapP99Ms)}; ` +
      `at ${options.streams} streams TTFB p50 ${signedMs(addedFigures.concurrentTtfbP50Ms)}, gap p99 ${signedMs(addedFigures.concurrentGapP99Ms)}\n`,
  );
  if (tollgate?.billing) {
    const b = tollgate.billing;
    process.stdout.write(
      `Billing: Σ meta.cost.total ${b.billedNano} n$, balances fell ${b.balanceChangeNano} n$, held after ${b.heldAfterNano} n$; ` +
        `ledger check ${tollgate.ledger?.ok ? 'OK' : 'FAILED'}\n`,
    );
  }
  for (const line of notes(results)) process.stdout.write(`${line}\n`);
  process.stdout.write(`\n${renderGoals(goals)}\n`);

  const file = writeResults(
    'stream-',
    {
      kind: 'tollgate-bench-stream',
      startedAt: startedAt.toISOString(),
      finishedAt: new Date().toISOString(),
      options: { ...options, targets, replyWords, maxTokens, tollgateEnv },
      machine: { ...machine, loadavgAtEnd: machineInfo().loadavg },
      pinning,
      results,
      added: addedFigures,
      goals,
    },
    startedAt,
  );
  process.stdout.write(`\nJSON: ${file}\n`);
});
