/**
 * Medians over the interleaved runs, the table, the goals as PASS/FAIL lines, and the JSON. Ratios and
 * differences are taken per run, then their median. Every run counts: what makes a figure less telling
 * (a saturated load CPU, errors, a moving ratio) is named in a caveat beside it, never left out.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import type { RunMetrics } from './measure.js';
import { median } from './stats.js';
import { TARGET_LABELS, type TargetName } from './target-names.js';

/** Busy share of the load CPU (generator and upstream) past which c50 measures that CPU, not the target. */
export const C50_LOAD_CPU_LIMIT = 0.95;

export interface RunRecord {
  run: number;
  target: TargetName;
  metrics?: RunMetrics;
  error?: string;
}

export interface TargetSummary {
  name: TargetName;
  label: string;
  /** False when it could not run at all (not installed, store not supported, …). */
  available: boolean;
  reason?: string;
  runsMeasured: number;
  failures: string[];
  fixedRate: number;
  rps?: number;
  rpsVsBare?: number;
  /** The per-run ratios behind `rpsVsBare`, in run order. */
  rpsVsBareRuns?: number[];
  c1P50Ms?: number;
  /** Unloaded p50 and p99 minus the simulator's own, µs. */
  addedP50Us?: number;
  addedP99Us?: number;
  /** p50 and p99 at the fixed rate minus the simulator's at that rate, ms. */
  fixedAddedP50Ms?: number;
  fixedAddedP99Ms?: number;
  /** p99 at the fixed rate minus the bare proxy's, ms. */
  fixedP99OverBareMs?: number;
  cpuUsPerReq?: number;
  cpuVsBare?: number;
  cpuVsBareRuns?: number[];
  /** req/s ÷ Portkey's req/s in the same run. */
  rpsVsPortkey?: number;
  dbCpuUsPerReq?: number;
  peakRssMb?: number;
  /** Median of `x-tollgate-overhead-ms` over calls one at a time, µs (against `addedP50Us`). */
  overheadHeaderUs?: number;
  /** Worst error rate over every phase of every run, 0..1. */
  errorRate?: number;
  /** What makes the figures of some runs less telling: shown beside them, never hidden. */
  caveats: string[];
}

export type GoalStatus = 'PASS' | 'FAIL' | 'N/A';

export interface GoalResult {
  target: TargetName;
  goal: string;
  status: GoalStatus;
  value: string;
}

type Peers = Partial<Record<TargetName, RunMetrics>>;

/** Each measured run of `target`, with what the other targets measured in the same run. */
function runsOf(records: readonly RunRecord[], target: TargetName): { m: RunMetrics; peers: Peers }[] {
  return records.flatMap((r) => {
    if (r.target !== target || !r.metrics) return [];
    const peers: Peers = {};
    for (const o of records) if (o.run === r.run && o.metrics) peers[o.target] = o.metrics;
    return [{ m: r.metrics, peers }];
  });
}

const ratio = (a: number | undefined, b: number | undefined) =>
  a === undefined || b === undefined || b === 0 ? undefined : a / b;
const diff = (a: number | undefined, b: number | undefined) =>
  a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) ? undefined : a - b;

export function summarize(
  targets: readonly TargetName[],
  records: readonly RunRecord[],
  unavailable: ReadonlyMap<TargetName, string>,
  fixedRate: number,
): TargetSummary[] {
  return targets.map((name) => {
    const runs = runsOf(records, name);
    const reason = unavailable.get(name);
    const base: TargetSummary = {
      name,
      label: TARGET_LABELS[name],
      available: reason === undefined,
      ...(reason === undefined ? {} : { reason }),
      runsMeasured: runs.length,
      failures: records.flatMap((r) => (r.target === name && r.error ? [`run ${r.run}: ${r.error}`] : [])),
      fixedRate,
      caveats: [],
    };
    if (runs.length === 0) return base;
    const each = (pick: (m: RunMetrics, peers: Peers) => number | undefined) =>
      runs.flatMap(({ m, peers }) => {
        const v = pick(m, peers);
        return v === undefined ? [] : [v];
      });
    const med = (pick: (m: RunMetrics, peers: Peers) => number | undefined) => median(each(pick));
    const rpsVsBareRuns = each((m, p) => ratio(m.c50.rps, p.bare?.c50.rps));
    const cpuVsBareRuns = each((m, p) => ratio(m.cpuUsPerReq, p.bare?.cpuUsPerReq));
    const count = (test: (m: RunMetrics, peers: Peers) => boolean) =>
      runs.filter(({ m, peers }) => test(m, peers)).length;
    const of = `of ${runs.length} run(s)`;
    const caveats: string[] = [];
    const c50Bound = count(
      (m, p) =>
        (m.c50.loadCpuBusy ?? 0) >= C50_LOAD_CPU_LIMIT ||
        (name !== 'bare' && (p.bare?.c50.loadCpuBusy ?? 0) >= C50_LOAD_CPU_LIMIT),
    );
    if (c50Bound > 0) {
      caveats.push(
        `in ${c50Bound} ${of} the load CPU (generator + upstream) was ≥ ${C50_LOAD_CPU_LIMIT * 100}% busy at c50 here or for the bare proxy: req/s there is partly that CPU's limit, so ratios understate the gap`,
      );
    }
    if (reason !== undefined)
      caveats.push(`measured in ${runs.length} run(s) only; then unavailable: ${reason}`);
    const errorRate = Math.max(...runs.map(({ m }) => m.errorRate));
    if (errorRate > 0.01) caveats.push(`answered up to ${(errorRate * 100).toFixed(2)}% errors in a phase`);
    const spread = rpsVsBareRuns.length > 1 ? Math.max(...rpsVsBareRuns) - Math.min(...rpsVsBareRuns) : 0;
    if (spread > 0.1) {
      caveats.push(
        `the ratio to the bare proxy moved by ${spread.toFixed(2)} between runs: a busy or throttled machine`,
      );
    }
    return {
      ...base,
      rps: med((m) => m.c50.rps),
      rpsVsBare: median(rpsVsBareRuns),
      rpsVsBareRuns,
      c1P50Ms: med((m) => m.c1.latency.p50),
      addedP50Us: med((m, p) => diff(m.c1.latency.p50 * 1000, (p.sim?.c1.latency.p50 ?? NaN) * 1000)),
      addedP99Us: med((m, p) => diff(m.c1.latency.p99 * 1000, (p.sim?.c1.latency.p99 ?? NaN) * 1000)),
      fixedAddedP50Ms: med((m, p) => diff(m.openFixed.latency.p50, p.sim?.openFixed.latency.p50)),
      fixedAddedP99Ms: med((m, p) => diff(m.openFixed.latency.p99, p.sim?.openFixed.latency.p99)),
      fixedP99OverBareMs: med((m, p) => diff(m.openFixed.latency.p99, p.bare?.openFixed.latency.p99)),
      cpuUsPerReq: med((m) => m.cpuUsPerReq),
      cpuVsBare: median(cpuVsBareRuns),
      cpuVsBareRuns,
      rpsVsPortkey: med((m, p) => ratio(m.c50.rps, p.portkey?.c50.rps)),
      dbCpuUsPerReq: med((m) => m.dbCpuUsPerReq),
      peakRssMb: med((m) => m.peakRssMb),
      overheadHeaderUs: med((m) => m.overheadHeaderUs),
      errorRate,
      caveats,
    };
  });
}

// ── goals ────────────────────────────────────────────────────────────────────

/** The goals of docs/performance.md, per Tollgate target. */
const GOALS: Record<'sqlite' | 'postgres', { rpsVsBare: number; cpuVsBare?: number; addedP50Us: number }> = {
  sqlite: { rpsVsBare: 0.6, cpuVsBare: 1.8, addedP50Us: 1000 },
  postgres: { rpsVsBare: 0.5, addedP50Us: 1000 },
};

/** The goals, evaluated for each Tollgate target from the ratios of this run. */
export function evaluateGoals(summaries: readonly TargetSummary[]): GoalResult[] {
  const out: GoalResult[] = [];
  for (const s of summaries) {
    if ((s.name !== 'sqlite' && s.name !== 'postgres') || s.runsMeasured === 0) continue;
    const goals = GOALS[s.name];
    const check = (
      goal: string,
      value: number | undefined,
      pass: (v: number) => boolean,
      shown: (v: number) => string,
      missing: string,
    ) =>
      out.push(
        value === undefined
          ? { target: s.name, goal, status: 'N/A', value: missing }
          : { target: s.name, goal, status: pass(value) ? 'PASS' : 'FAIL', value: shown(value) },
      );
    const noBare = 'no bare proxy in this run (add bare to --only)';
    check(
      `req/s at c50 ≥ ${goals.rpsVsBare}× the bare proxy`,
      s.rpsVsBare,
      (r) => r >= goals.rpsVsBare,
      (r) => `${r.toFixed(2)}×${runsShown(s.rpsVsBareRuns)}`,
      noBare,
    );
    if (goals.cpuVsBare !== undefined) {
      const limit = goals.cpuVsBare;
      check(
        `CPU per call ≤ ${limit}× the bare proxy's`,
        s.cpuVsBare,
        (r) => r <= limit,
        (r) => `${r.toFixed(2)}×${runsShown(s.cpuVsBareRuns)}`,
        noBare,
      );
    }
    check(
      `unloaded added p50 over the upstream ≤ ${goals.addedP50Us} µs`,
      s.addedP50Us,
      (v) => v <= goals.addedP50Us,
      (v) => `${v.toFixed(0)} µs`,
      'no simulator run in this run (add sim to --only)',
    );
    check(
      `p99 at ${s.fixedRate}/s ≤ the bare proxy's + 1 ms`,
      s.fixedP99OverBareMs,
      (v) => v <= 1,
      (v) => `${signed(v, 2)} ms`,
      noBare,
    );
    check(
      "req/s at c50 ≥ 8× Portkey's",
      s.rpsVsPortkey,
      (v) => v >= 8,
      (v) => `${v.toFixed(1)}×`,
      'Portkey not measured (npm install --no-save @portkey-ai/gateway@1.15.2)',
    );
    check(
      'peak RSS under c50 ≤ 150 MB',
      s.peakRssMb,
      (v) => v <= 150,
      (v) => `${v.toFixed(0)} MB`,
      'not measured',
    );
  }
  return out;
}

/** ` (per run a / b / c)` when more than one run gave the ratio; empty otherwise. */
function runsShown(ratios: readonly number[] | undefined): string {
  if (ratios === undefined || ratios.length < 2) return '';
  return ` (per run ${ratios.map((v) => v.toFixed(2)).join(' / ')})`;
}

function signed(v: number, digits: number): string {
  return `${v >= 0 ? '+' : ''}${v.toFixed(digits)}`;
}

// ── table ────────────────────────────────────────────────────────────────────

/** A figure, or `n/a` where this run did not measure what it compares with. */
export function fmt(value: number | undefined, digits = 0): string {
  if (value === undefined || !Number.isFinite(value)) return 'n/a';
  return value.toFixed(digits);
}

/** A plain text table: first column left-aligned, the others right-aligned. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ');
  return [line(header), widths.map((w) => '─'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

export function renderTable(summaries: readonly TargetSummary[]): string {
  const rate = summaries[0]?.fixedRate ?? 200;
  const header =
    `target|req/s|×bare|c1 p50 ms|+p50 µs|+p99 µs|header µs|${rate}/s +p50 ms|+p99 ms|CPU µs/req|×bare|RSS MB|errors`.split(
      '|',
    );
  const rows: string[][] = [];
  const notes: string[] = [];
  for (const s of summaries) {
    if (s.runsMeasured === 0) {
      notes.push(
        `${s.label}  unavailable: ${(s.reason ?? s.failures[0] ?? 'no successful run').slice(0, 160)}`,
      );
      continue;
    }
    rows.push([
      s.label,
      fmt(s.rps),
      fmt(s.rpsVsBare, 2),
      fmt(s.c1P50Ms, 3),
      fmt(s.addedP50Us),
      fmt(s.addedP99Us),
      s.overheadHeaderUs === undefined ? 'none' : fmt(s.overheadHeaderUs),
      fmt(s.fixedAddedP50Ms, 3),
      fmt(s.fixedAddedP99Ms, 3),
      fmt(s.cpuUsPerReq),
      fmt(s.cpuVsBare, 2),
      fmt(s.peakRssMb),
      `${fmt((s.errorRate ?? 0) * 100, 2)}%`,
    ]);
    for (const c of s.caveats) notes.push(`caveat: ${s.label}: ${c}`);
  }
  return [table(header, rows), ...notes].join('\n');
}

export function renderGoals(goals: readonly GoalResult[]): string {
  if (goals.length === 0) return 'Goals: no Tollgate target was measured.';
  const lines = ['Goals (from the ratios of this run):'];
  for (const g of goals) lines.push(`  ${g.status.padEnd(4)} ${g.target.padEnd(8)} ${g.goal}: ${g.value}`);
  return lines.join('\n');
}

// ── JSON ─────────────────────────────────────────────────────────────────────

export function machineInfo(): Record<string, unknown> {
  const list = cpus();
  return {
    cpus: list.length,
    cpuModel: list[0]?.model,
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    loadavg: loadavg(),
  };
}

/** Writes `bench/results/<prefix><ISO time>.json` and returns its path. */
export function writeResults(prefix: string, data: unknown, startedAt: Date): string {
  const dir = join(import.meta.dirname, 'results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${prefix}${startedAt.toISOString().replace(/:/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify(data, null, 2)}\n`);
  return file;
}
