/**
 * One measurement of one running target: the closed-loop maximum at c50 (after the warm-up, with the
 * target's CPU time over the same window and its peak RSS), the unloaded latency at c1, and the open-loop
 * latency at a fixed rate and at half the target's own c50 maximum.
 */
import type { ClosedGenerator, ClosedResult, OpenResult } from './loadgen.js';
import { peakRssKb } from './proc-stats.js';
import type { LoadGen } from './processes.js';
import type { RunningTarget } from './targets.js';

export interface PhaseOptions {
  warmupSec: number;
  durationSec: number;
  /** Offered rate of the fixed-rate open-loop phase (200/s by default). */
  fixedRate: number;
  /** Closed-loop connections of the throughput phase (50). */
  connections: number;
  /** The client of the c50 phase. */
  generator: ClosedGenerator;
}

export interface RunMetrics {
  c50: ClosedResult;
  c1: ClosedResult;
  openFixed: OpenResult;
  openHalf: OpenResult;
  /** Half of this run's c50 requests/s: the rate offered in `openHalf`. */
  halfRate: number;
  /** Target CPU per completed request over the c50 window, µs. */
  cpuUsPerReq: number | undefined;
  /** CPU of the database server processes per request over the same window (PostgreSQL), µs. */
  dbCpuUsPerReq: number | undefined;
  /** VmHWM of the target after the c50 phase, MB. */
  peakRssMb: number | undefined;
  /** The worst error rate of the four phases, 0..1. */
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
    cpu: [{ pid: target.pid, withDescendants: target.withDescendants }],
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

  const halfRate = Math.max(1, Math.round(c50.rps / 2));
  log(`open loop at ${halfRate}/s (half of its c${options.connections} maximum)`);
  const openHalf = await loadgen.run<OpenResult>({
    kind: 'open',
    request,
    rate: halfRate,
    warmupSec: shortWarmup,
    durationSec: options.durationSec,
  });

  return {
    c50,
    c1,
    openFixed,
    openHalf,
    halfRate,
    cpuUsPerReq: cpuUs === undefined || completed === 0 ? undefined : cpuUs / completed,
    dbCpuUsPerReq:
      c50.cpuCommandUs === undefined || completed === 0 ? undefined : c50.cpuCommandUs / completed,
    peakRssMb: hwm === undefined ? undefined : hwm / 1024,
    errorRate: Math.max(c50.errorRate, c1.errorRate, openFixed.errorRate, openHalf.errorRate),
  };
}
