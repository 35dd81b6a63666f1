/**
 * One measurement of one running target: the closed-loop maximum at c50 (after the warm-up, with the
 * target's CPU time over the same window and its peak RSS), the unloaded latency at c1, the open-loop
 * latency at a fixed rate, and Tollgate's own `x-tollgate-overhead-ms` over calls one at a time.
 */
import type { ClosedGenerator, ClosedResult, OpenResult } from './loadgen.js';
import { peakRssKb } from './proc-stats.js';
import type { LoadGen } from './processes.js';
import type { RequestSpec } from './raw-http.js';
import { median } from './stats.js';
import type { RunningTarget } from './targets.js';

export interface PhaseOptions {
  warmupSec: number;
  durationSec: number;
  /** Offered rate of the open-loop phase (200/s by default). */
  fixedRate: number;
  /** Closed-loop connections of the throughput phase (50). */
  connections: number;
  generator: ClosedGenerator;
}

export interface RunMetrics {
  c50: ClosedResult;
  c1: ClosedResult;
  openFixed: OpenResult;
  /** Target CPU per completed request over the c50 window, µs. */
  cpuUsPerReq: number | undefined;
  /** CPU of the database server processes per request over the same window (PostgreSQL), µs. */
  dbCpuUsPerReq: number | undefined;
  /** VmHWM of the target after the c50 phase, MB. */
  peakRssMb: number | undefined;
  /** Median of the `x-tollgate-overhead-ms` header over calls one at a time, µs (Tollgate only). */
  overheadHeaderUs?: number | undefined;
  /** The worst error rate of the phases, 0..1. */
  errorRate: number;
}

export async function measure(
  target: RunningTarget,
  loadgen: LoadGen,
  options: PhaseOptions,
  log: (line: string) => void = () => {},
): Promise<RunMetrics> {
  const { request } = target;
  const shortWarmup = Math.min(1, options.warmupSec);
  log(`c${options.connections} for ${options.durationSec}s after ${options.warmupSec}s warm-up`);
  const c50 = await loadgen.run<ClosedResult>({
    kind: 'closed',
    generator: options.generator,
    request,
    connections: options.connections,
    warmupSec: options.warmupSec,
    durationSec: options.durationSec,
    cpu: [target.pid],
    ...(target.cpuCommand ? { cpuCommand: target.cpuCommand } : {}),
  });
  const hwm = peakRssKb(target.pid);
  const completed = c50.ok + c50.non200;
  const cpuUs = c50.cpuUs[0];

  log('c1 (unloaded latency)');
  const c1 = await loadgen.run<ClosedResult>({
    kind: 'closed',
    // The generator's own client, which times every answer as it is: wrk corrects its latency for
    // coordinated omission, which at one connection reports a tail longer than any answer took.
    generator: { kind: 'raw' },
    request,
    connections: 1,
    warmupSec: shortWarmup,
    durationSec: options.durationSec,
    cpu: [],
  });

  log(`open loop at ${options.fixedRate}/s`);
  const openFixed = await loadgen.run<OpenResult>({
    kind: 'open',
    request,
    rate: options.fixedRate,
    warmupSec: shortWarmup,
    durationSec: options.durationSec,
  });

  return {
    c50,
    c1,
    openFixed,
    cpuUsPerReq: cpuUs === undefined || completed === 0 ? undefined : cpuUs / completed,
    dbCpuUsPerReq:
      c50.cpuCommandUs === undefined || completed === 0 ? undefined : c50.cpuCommandUs / completed,
    peakRssMb: hwm === undefined ? undefined : hwm / 1024,
    overheadHeaderUs: await overheadHeaderUs(request),
    errorRate: Math.max(c50.errorRate, c1.errorRate, openFixed.errorRate),
  };
}

/** The median `x-tollgate-overhead-ms` of `calls` calls sent one at a time, µs; undefined without it. */
async function overheadHeaderUs(request: RequestSpec, calls = 200): Promise<number | undefined> {
  const values: number[] = [];
  for (let i = 0; i < calls; i++) {
    const authorization = request.authorizations?.[i % request.authorizations.length];
    const response = await fetch(request.url, {
      method: 'POST',
      headers: authorization ? { ...request.headers, authorization } : request.headers,
      body: request.body,
    });
    await response.arrayBuffer();
    const header = response.headers.get('x-tollgate-overhead-ms');
    if (header === null) return undefined;
    values.push(Number(header) * 1000);
  }
  return median(values);
}
