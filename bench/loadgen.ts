/**
 * The load generator: a child process on the load CPU running one job at a time, sent over IPC.
 * `closed`: N connections, each sending the next request when the previous answer arrived (c50 on wrk,
 * c1 on `raw-http.ts`), the target's CPU time read from /proc at the window's two ends. `open`: sends at
 * fixed scheduled times whatever the answers do, latency timed from the *scheduled* send (no coordinated
 * omission). Anything but 200 counts as an error. Run by plain `node`: imports nothing from `src/`.
 */
import { performance } from 'node:perf_hooks';
import { allowedCpus, busyShare, cpuTimeOfCommandUs, cpuTimeUs } from './proc-stats.js';
import { RawClient, type RawRequest, type RequestSpec, requestHead } from './raw-http.js';
import { type LatencySummary, Samples, sleep } from './stats.js';
import { WrkRun } from './wrk.js';

/** The closed loop's client: wrk (its path), or this process's own (`raw`). */
export type ClosedGenerator = { kind: 'wrk'; path: string } | { kind: 'raw' };

export interface ClosedJob {
  kind: 'closed';
  generator: ClosedGenerator;
  request: RequestSpec;
  connections: number;
  warmupSec: number;
  durationSec: number;
  /** Processes whose CPU time is read at the window's ends (the target). */
  cpu: number[];
  /** Also the CPU time of every process with this command name (e.g. `postgres`). */
  cpuCommand?: string;
}

export interface OpenJob {
  kind: 'open';
  request: RequestSpec;
  /** Requests per second offered. */
  rate: number;
  /** Sends in the first `warmupSec` are made but not counted. */
  warmupSec: number;
  durationSec: number;
}

export type Job = ClosedJob | OpenJob;

/** Answers with 200, with another status, and none (connection errors, timeouts); error rate 0..1. */
export interface Outcomes {
  ok: number;
  non200: number;
  errors: number;
  statuses: Record<string, number>;
  errorRate: number;
}

export interface ClosedResult extends Outcomes {
  kind: 'closed';
  generator: 'wrk' | 'raw';
  windowSec: number;
  /** 200 answers per second inside the window. */
  rps: number;
  /** Each answer's time (raw client), or wrk's, corrected for coordinated omission. */
  latency: LatencySummary;
  /** CPU µs used by each probed process over the window (undefined where /proc is not readable). */
  cpuUs: (number | undefined)[];
  cpuCommandUs?: number;
  /** How busy the load generator's CPUs were over the window, 0..1 (undefined without /proc). */
  loadCpuBusy: number | undefined;
}

export interface OpenResult extends Outcomes {
  kind: 'open';
  offeredRate: number;
  /** Sends counted (scheduled inside the measured part). */
  scheduled: number;
  /** 200 answers per second that completed inside the measured part (a backlog lowers it). */
  achievedRate: number;
  /** From the scheduled send time to the end of the answer. */
  latency: LatencySummary;
  /** From the actual send to the end of the answer. */
  service: LatencySummary;
  /** How late the generator itself sent (actual − scheduled). */
  sendLag: LatencySummary;
  /** How busy the load CPU (generator and upstream) was over the sends, 0..1. */
  loadCpuBusy: number | undefined;
}

export type JobResult = ClosedResult | OpenResult;

export type LoadgenMessage = { id: number; result: JobResult } | { id: number; error: string };

function outcomes(ok: number, non200: number, errors: number, statuses: Record<string, number>): Outcomes {
  const all = ok + non200 + errors;
  return { ok, non200, errors, statuses, errorRate: all === 0 ? 0 : (non200 + errors) / all };
}

/** The CPUs this process is pinned to (with the upstream simulator): whose busy share is reported. */
const LOAD_CPUS = allowedCpus();

function cpuNow(pids: readonly number[]): (number | undefined)[] {
  return pids.map((pid) => cpuTimeUs(pid));
}

async function runClosed(job: ClosedJob): Promise<ClosedResult> {
  return job.generator.kind === 'wrk' ? runClosedWrk(job, job.generator.path) : runClosedRaw(job);
}

type WindowFigures = Pick<ClosedResult, 'cpuUs' | 'cpuCommandUs' | 'loadCpuBusy'>;

/** A measurement window: CPU times and the load CPU's busy share, read now and when it is closed. */
function openWindow(job: ClosedJob): () => WindowFigures {
  const cpuStart = cpuNow(job.cpu);
  const commandStart = job.cpuCommand ? cpuTimeOfCommandUs(job.cpuCommand) : undefined;
  const loadBusy = busyShare(LOAD_CPUS);
  return () => {
    const loadCpuBusy = loadBusy();
    const cpuEnd = cpuNow(job.cpu);
    const commandEnd = job.cpuCommand ? cpuTimeOfCommandUs(job.cpuCommand) : undefined;
    return {
      cpuUs: cpuStart.map((s, i) => {
        const e = cpuEnd[i];
        return s === undefined || e === undefined ? undefined : e - s;
      }),
      ...(commandStart !== undefined && commandEnd !== undefined
        ? { cpuCommandUs: commandEnd - commandStart }
        : {}),
      loadCpuBusy,
    };
  };
}

async function runClosedWrk(job: ClosedJob, path: string): Promise<ClosedResult> {
  const wrk = new WrkRun(path, job.request);
  try {
    if (job.warmupSec > 0) await wrk.run(job.connections, job.warmupSec);
    const closeWindow = openWindow(job);
    const summary = await wrk.run(job.connections, job.durationSec);
    const window = closeWindow();

    const windowSec = summary.durationUs / 1e6;
    const ok = summary.requests - summary.status;
    const errors = summary.connect + summary.read + summary.write + summary.timeout;
    return {
      kind: 'closed',
      generator: 'wrk',
      windowSec,
      rps: ok / windowSec,
      latency: { count: summary.requests, ...summary.latency },
      ...window,
      ...outcomes(ok, summary.status, errors, summary.status > 0 ? { '400-599': summary.status } : {}),
    };
  } finally {
    wrk.dispose();
  }
}

async function runClosedRaw(job: ClosedJob): Promise<ClosedResult> {
  const raw = rawRequest(job.request);
  const client = new RawClient(raw, job.connections);
  const heads = (job.request.authorizations ?? [undefined]).map((a) => requestHead(raw, a));
  const latency = new Samples();
  const statuses: Record<string, number> = {};
  let ok = 0;
  let non200 = 0;
  let errors = 0;
  let measuring = false;
  let stopped = false;
  let next = 0;
  const lanes: Promise<void>[] = [];
  for (let lane = 0; lane < job.connections; lane++) {
    lanes.push(
      (async () => {
        while (!stopped) {
          const sentAt = performance.now();
          const counted = measuring;
          const status = await new Promise<number | undefined>((resolve) =>
            client.send(heads[next++ % heads.length] as Buffer, resolve),
          );
          if (!counted || !measuring) continue;
          if (status === undefined) errors++;
          else if (status === 200) {
            ok++;
            latency.add(performance.now() - sentAt);
          } else {
            non200++;
            statuses[status] = (statuses[status] ?? 0) + 1;
          }
        }
      })(),
    );
  }
  await sleep(job.warmupSec * 1000);
  const closeWindow = openWindow(job);
  const start = performance.now();
  measuring = true;
  await sleep(job.durationSec * 1000);
  measuring = false;
  const end = performance.now();
  const window = closeWindow();
  stopped = true;
  await Promise.all(lanes);
  client.close();

  const windowSec = (end - start) / 1000;
  return {
    kind: 'closed',
    generator: 'raw',
    windowSec,
    rps: ok / windowSec,
    latency: latency.summary(),
    ...window,
    ...outcomes(ok, non200, errors, statuses),
  };
}

function rawRequest(spec: RequestSpec): RawRequest {
  const url = new URL(spec.url);
  return {
    host: url.hostname,
    port: Number(url.port || 80),
    path: url.pathname + url.search,
    method: spec.method,
    headers: spec.headers,
    body: Buffer.from(spec.body),
  };
}

async function runOpen(job: OpenJob): Promise<OpenResult> {
  const raw = rawRequest(job.request);
  const client = new RawClient(raw, 512);
  const heads = (job.request.authorizations ?? [undefined]).map((a) => requestHead(raw, a));
  let nextHead = 0;
  const latency = new Samples(Math.ceil(job.rate * job.durationSec) + 16);
  const service = new Samples(Math.ceil(job.rate * job.durationSec) + 16);
  const sendLag = new Samples(Math.ceil(job.rate * job.durationSec) + 16);
  const statuses: Record<string, number> = {};
  let ok = 0;
  let non200 = 0;
  let errors = 0;
  let scheduledCounted = 0;
  let pending = 0;
  let onIdle: (() => void) | undefined;

  const interval = 1000 / job.rate;
  const total = Math.max(1, Math.round(job.rate * (job.warmupSec + job.durationSec)));
  const warmupSends = Math.round(job.rate * job.warmupSec);
  // Up to 250/s the generator spins for the last millisecond before each send so it sends on time; above,
  // sends are batched per timer tick (up to ~1 ms late). `sendLag` says how late it was.
  const spin = job.rate <= 250;

  const windowEnd = () => start + total * interval;
  let okInWindow = 0;

  let abandoned = false;
  const finished = () => {
    pending--;
    if (pending === 0) onIdle?.();
  };

  // From the first counted send to the last send (at 250/s and below it includes the generator's spin).
  let loadBusy: (() => number | undefined) | undefined;
  let loadCpuBusy: number | undefined;
  const fire = (index: number, scheduled: number) => {
    const counted = index >= warmupSends;
    if (index === warmupSends) loadBusy = busyShare(LOAD_CPUS);
    const sentAt = performance.now();
    if (counted) {
      scheduledCounted++;
      sendLag.add(sentAt - scheduled);
    }
    pending++;
    const head = heads[nextHead++ % heads.length] as Buffer;
    client.send(head, (status) => {
      if (abandoned) return;
      if (counted) {
        const doneAt = performance.now();
        if (status === undefined) errors++;
        else if (status === 200) {
          ok++;
          if (doneAt <= windowEnd()) okInWindow++;
          latency.add(doneAt - scheduled);
          service.add(doneAt - sentAt);
        } else {
          non200++;
          statuses[status] = (statuses[status] ?? 0) + 1;
        }
      }
      finished();
    });
  };

  const start = performance.now() + 20;
  await new Promise<void>((resolve) => {
    let i = 0;
    const tick = () => {
      const now = performance.now();
      while (i < total && start + i * interval <= now) {
        fire(i, start + i * interval);
        i++;
      }
      if (i >= total) {
        loadCpuBusy = loadBusy?.();
        resolve();
        return;
      }
      const wait = start + i * interval - performance.now();
      if (spin && wait < 1.5) setImmediate(tick);
      else setTimeout(tick, spin ? wait - 1 : Math.max(0, wait));
    };
    tick();
  });

  if (pending > 0) {
    const drained = new Promise<void>((resolve) => {
      onIdle = resolve;
    });
    const deadline = sleep(30_000).then(() => 'timeout' as const);
    if ((await Promise.race([drained, deadline])) === 'timeout') {
      abandoned = true;
      errors += pending;
    }
  }
  client.close();

  // The measured part as scheduled; answers that arrive after its end do not count as achieved.
  const measuredSec = Math.max(1e-3, ((total - warmupSends) * interval) / 1000);
  return {
    kind: 'open',
    offeredRate: job.rate,
    scheduled: scheduledCounted,
    achievedRate: okInWindow / measuredSec,
    latency: latency.summary(),
    service: service.summary(),
    sendLag: sendLag.summary(),
    loadCpuBusy,
    ...outcomes(ok, non200, errors, statuses),
  };
}

function runJob(job: Job): Promise<JobResult> {
  return job.kind === 'closed' ? runClosed(job) : runOpen(job);
}

// Serve jobs from the parent, one at a time, until the channel closes.
if (process.send) {
  let queue: Promise<void> = Promise.resolve();
  process.on('message', (message: { id: number; job: Job }) => {
    queue = queue.then(async () => {
      let reply: LoadgenMessage;
      try {
        reply = { id: message.id, result: await runJob(message.job) };
      } catch (err) {
        reply = { id: message.id, error: err instanceof Error ? (err.stack ?? err.message) : String(err) };
      }
      process.send?.(reply);
    });
  });
  process.on('disconnect', () => process.exit(0));
}
