/**
 * Reads the garbage collections out of a process's output under V8's `--trace-gc-nvp` (with the origin line
 * of `bench/profile/gc-trace.mjs`), and sums them per phase of load, for `--mode gc` of
 * `npm run bench:profile`.
 */

export interface GcEvent {
  /** When it started, in ms since the epoch (the process's time origin plus V8's stamp). */
  at: number;
  /** `s` scavenge (young generation), `mc` mark-compact (the whole heap), as V8 names them. */
  kind: string;
  /** The main thread's pause, ms. */
  pauseMs: number;
  /** Bytes allocated since the previous collection. */
  allocated: number;
  /** Bytes moved from the young generation to the old one by this collection. */
  promoted: number;
}

// `[pid:isolate]`; V8 as of Node 24 adds a third field (`[pid:isolate:0]`).
const LINE = /^\[\d+:0x[0-9a-f]+(?::\d+)?\]\s+(\d+(?:\.\d+)?) ms: (.*)$/;
const ORIGIN = /^gc-trace origin (\d+(?:\.\d+)?)$/m;

/** The collections in `output`; throws when the origin line of `bench/profile/gc-trace.mjs` is missing. */
export function parseGcTrace(output: string): GcEvent[] {
  const origin = ORIGIN.exec(output);
  if (!origin) throw new Error('no "gc-trace origin" line: was bench/profile/gc-trace.mjs preloaded?');
  const start = Number(origin[1]);
  const events: GcEvent[] = [];
  for (const line of output.split('\n')) {
    const match = LINE.exec(line);
    if (!match) continue;
    const fields = new Map<string, string>();
    for (const pair of (match[2] ?? '').split(' ')) {
      const eq = pair.indexOf('=');
      if (eq > 0) fields.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
    const kind = fields.get('gc');
    if (kind === undefined) continue;
    events.push({
      at: start + Number(match[1]),
      kind,
      pauseMs: Number(fields.get('pause') ?? 0),
      allocated: Number(fields.get('allocated') ?? 0),
      promoted: Number(fields.get('promoted') ?? 0),
    });
  }
  return events;
}

export interface PhaseWindow {
  name: string;
  /** ms since the epoch. */
  start: number;
  end: number;
  /** Requests answered in the phase (0 when idle). */
  requests: number;
}

export interface PhaseGc {
  name: string;
  seconds: number;
  requests: number;
  scavenges: number;
  markCompacts: number;
  allocatedMb: number;
  promotedMb: number;
  /** Promoted bytes per answered request (undefined when idle). */
  promotedPerRequest: number | undefined;
  maxScavengeMs: number;
  maxMarkCompactMs: number;
}

/** The collections that started inside each window, summed. */
export function gcByPhase(events: readonly GcEvent[], phases: readonly PhaseWindow[]): PhaseGc[] {
  return phases.map((phase) => {
    const inside = events.filter((e) => e.at >= phase.start && e.at < phase.end);
    const scavenges = inside.filter((e) => e.kind === 's');
    const markCompacts = inside.filter((e) => e.kind === 'mc');
    const promoted = inside.reduce((sum, e) => sum + e.promoted, 0);
    return {
      name: phase.name,
      seconds: (phase.end - phase.start) / 1000,
      requests: phase.requests,
      scavenges: scavenges.length,
      markCompacts: markCompacts.length,
      allocatedMb: inside.reduce((sum, e) => sum + e.allocated, 0) / 1e6,
      promotedMb: promoted / 1e6,
      promotedPerRequest: phase.requests > 0 ? promoted / phase.requests : undefined,
      maxScavengeMs: Math.max(0, ...scavenges.map((e) => e.pauseMs)),
      maxMarkCompactMs: Math.max(0, ...markCompacts.map((e) => e.pauseMs)),
    };
  });
}

/** One step of `--phases`. */
export type PhaseSpec =
  | { kind: 'closed'; connections: number; seconds: number }
  | { kind: 'open'; rate: number | 'half'; seconds: number }
  | { kind: 'idle'; seconds: number };

/**
 * `c50:10,idle:3,200:20,half:20` → 10 s closed loop at 50 connections, 3 s without load, 20 s open loop at
 * 200/s, 20 s open loop at half the last closed loop's req/s. Throws on anything else.
 */
export function parsePhases(spec: string): PhaseSpec[] {
  const phases = spec.split(',').map((token): PhaseSpec => {
    const [what, secs, extra] = token.trim().split(':');
    const seconds = Number(secs);
    if (!what || extra !== undefined || !Number.isFinite(seconds) || seconds <= 0)
      throw new Error(`phase "${token}" is not <load>:<seconds>`);
    if (what === 'idle') return { kind: 'idle', seconds };
    if (what === 'half') return { kind: 'open', rate: 'half', seconds };
    const closed = /^c(\d+)$/.exec(what);
    if (closed) return { kind: 'closed', connections: Number(closed[1]), seconds };
    if (/^\d+$/.test(what) && Number(what) > 0) return { kind: 'open', rate: Number(what), seconds };
    throw new Error(`phase "${token}": the load is c<connections>, <rate per second>, half or idle`);
  });
  const firstHalf = phases.findIndex((p) => p.kind === 'open' && p.rate === 'half');
  if (firstHalf >= 0 && !phases.slice(0, firstHalf).some((p) => p.kind === 'closed'))
    throw new Error('a "half" phase needs a closed-loop phase before it');
  return phases;
}

/** The phase's name in the report: `c50`, `200/s`, `half (4,700/s)`, `idle`. */
export function phaseName(phase: PhaseSpec, halfRate?: number): string {
  if (phase.kind === 'idle') return 'idle';
  if (phase.kind === 'closed') return `c${phase.connections}`;
  return phase.rate === 'half' ? `half (${halfRate ?? '?'}/s)` : `${phase.rate}/s`;
}
