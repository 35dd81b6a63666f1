import { describe, expect, it } from 'vitest';
import type { ClosedResult, OpenResult } from '../../bench/loadgen.js';
import type { RunMetrics } from '../../bench/measure.js';
import { evaluateGoals, type GoalResult, type RunRecord, summarize } from '../../bench/report.js';
import type { TargetName } from '../../bench/target-names.js';

// `npm run bench` prints its goals as PASS / FLOOR / FAIL / N/A from these two functions, and
// docs/performance.md lists them: each rule is checked here on runs built by hand.

interface Figures {
  rps: number;
  c1P50: number;
  fixedP99: number;
  halfP99: number;
  cpu: number;
  rss: number;
  /** How busy the load CPU was in the half-maximum phase (0..1). */
  halfLoad?: number;
  /** How busy the load CPU was in the c50 phase (0..1). */
  c50Load?: number;
  /** The speed probe's times on the target's CPU, ms. */
  speed?: number[];
}

const closed = (rps: number, p50: number, loadCpuBusy?: number): ClosedResult =>
  ({
    rps,
    latency: { p50, p99: p50 * 2 },
    ok: 1000,
    non200: 0,
    errors: 0,
    loadCpuBusy,
  }) as unknown as ClosedResult;
const open = (p99: number, loadCpuBusy = 0.3): OpenResult =>
  ({ latency: { p50: p99 / 4, p99 }, achievedRate: 100, loadCpuBusy }) as unknown as OpenResult;

function metrics(f: Figures): RunMetrics {
  return {
    c50: closed(f.rps, 1, f.c50Load),
    c1: closed(1000, f.c1P50),
    openFixed: open(f.fixedP99),
    openHalf: open(f.halfP99, f.halfLoad),
    halfRate: f.rps / 2,
    cpuUsPerReq: f.cpu,
    dbCpuUsPerReq: undefined,
    peakRssMb: f.rss,
    errorRate: 0,
    ...(f.speed ? { speedMs: f.speed } : {}),
  };
}

const SIM: Figures = { rps: 20_000, c1P50: 0.06, fixedP99: 1, halfP99: 10, cpu: 40, rss: 200 };
const BARE: Figures = { rps: 10_000, c1P50: 0.13, fixedP99: 2, halfP99: 20, cpu: 50, rss: 120 };

/** Runs 1..n of the simulator, the bare proxy and Tollgate on SQLite (and Portkey when given). */
function records(
  sqlite: Figures[],
  bare: Figures[] = sqlite.map(() => BARE),
  portkey?: Figures[],
): RunRecord[] {
  return sqlite.flatMap((s, i) => {
    const run = i + 1;
    const rows: RunRecord[] = [
      { run, target: 'sim', metrics: metrics(SIM) },
      { run, target: 'bare', metrics: metrics(bare[i] as Figures) },
      { run, target: 'sqlite', metrics: metrics(s) },
    ];
    if (portkey) rows.push({ run, target: 'portkey', metrics: metrics(portkey[i] as Figures) });
    return rows;
  });
}

function goals(recs: RunRecord[]): GoalResult[] {
  const targets: TargetName[] = ['sim', 'bare', 'sqlite', 'portkey'];
  return evaluateGoals(summarize(targets, recs, new Map(), 200));
}

function goal(results: GoalResult[], starts: string): GoalResult {
  const found = results.find((g) => g.goal.startsWith(starts));
  if (!found) throw new Error(`no goal starting "${starts}"`);
  return found;
}

const GOOD: Figures = { rps: 8_000, c1P50: 0.25, fixedP99: 2.5, halfP99: 20.5, cpu: 65, rss: 140 };

describe('the benchmark report', () => {
  it('takes each ratio per run, then the median over the runs', () => {
    // Tollgate's req/s 0.8 / 0.4 / 0.6 of the bare proxy's in runs 1–3, the bare proxy itself 10k / 5k / 10k.
    const recs = records(
      [
        { ...GOOD, rps: 8_000 },
        { ...GOOD, rps: 2_000 },
        { ...GOOD, rps: 6_000 },
      ],
      [BARE, { ...BARE, rps: 5_000 }, BARE],
    );
    const [, , sqlite] = summarize(['sim', 'bare', 'sqlite'], recs, new Map(), 200);
    expect(sqlite?.rpsVsBare).toBeCloseTo(0.6, 10);
    expect(sqlite?.cpuVsBare).toBeCloseTo(1.3, 10);
    // c1 p50 minus the simulator's, in µs: 0.25 − 0.06 ms.
    expect(sqlite?.addedP50Us).toBeCloseTo(190, 6);
    expect(sqlite?.fixedP99OverBareMs).toBeCloseTo(0.5, 10);

    // The goal lines show the runs behind each median ratio, in run order.
    const results = evaluateGoals(summarize(['sim', 'bare', 'sqlite'], recs, new Map(), 200));
    expect(goal(results, 'req/s at c50 ≥ 0.7×')).toMatchObject({
      status: 'FLOOR',
      value: '0.60× (per run 0.80 / 0.40 / 0.60)',
    });
    expect(goal(results, 'gateway CPU').value).toBe('1.30× (per run 1.30 / 1.30 / 1.30)');
  });

  it('passes every goal the figures meet and leaves the soak and a missing Portkey to N/A', () => {
    const results = goals(records([GOOD, GOOD, GOOD]));
    expect(results.map((g) => [g.goal.slice(0, 12), g.status])).toEqual([
      ['req/s at c50', 'PASS'],
      ['req/s at c50', 'N/A'],
      ['gateway CPU ', 'N/A'],
      ['unloaded add', 'PASS'],
      ['p99 at 200/s', 'PASS'],
      ['p99 at half ', 'PASS'],
      ['peak RSS und', 'PASS'],
      ['memory flat ', 'N/A'],
    ]);
  });

  it('tells the floor from a failure, and fails each goal just past its bound', () => {
    const floor = goals(records([{ ...GOOD, rps: 5_500 }]));
    expect(goal(floor, 'req/s at c50 ≥ 0.7×')).toMatchObject({ status: 'FLOOR', value: '0.55×' });
    const below = goals(records([{ ...GOOD, rps: 5_490 }]));
    expect(goal(below, 'req/s at c50 ≥ 0.7×').status).toBe('FAIL');

    const past = goals(
      records([{ rps: 8_000, c1P50: 0.311, fixedP99: 3.01, halfP99: 21.01, cpu: 70.5, rss: 151 }]),
    );
    expect(goal(past, 'gateway CPU').status).toBe('N/A');
    expect(goal(past, 'unloaded added p50')).toMatchObject({ status: 'FAIL', value: '251 µs' });
    expect(goal(past, 'p99 at 200/s').status).toBe('FAIL');
    expect(goal(past, 'p99 at half').status).toBe('FAIL');
    expect(goal(past, 'peak RSS').status).toBe('FAIL');
  });

  it("compares against Portkey's req/s in the same run", () => {
    const portkey = { ...GOOD, rps: 900, cpu: 700 };
    const met = goals(records([GOOD], undefined, [portkey]));
    expect(goal(met, "req/s at c50 ≥ 8× Portkey's")).toMatchObject({
      status: 'PASS',
      value: '8.9× (CPU 10.8×)',
    });
    const short = goals(records([GOOD], undefined, [{ ...portkey, rps: 1_100 }]));
    expect(goal(short, "req/s at c50 ≥ 8× Portkey's").status).toBe('FAIL');
  });

  it('leaves a run out of the half-maximum comparison when the load CPU was 80% busy in either phase', () => {
    // Run 1 would fail by 30 ms, but the bare proxy's phase queued on the load CPU; run 2 passes.
    const mixed = goals(
      records(
        [
          { ...GOOD, halfP99: 50 },
          { ...GOOD, halfP99: 20 },
        ],
        [{ ...BARE, halfLoad: 0.8 }, BARE],
      ),
    );
    expect(goal(mixed, 'p99 at half')).toMatchObject({ status: 'PASS' });
    expect(goal(mixed, 'p99 at half').value).toContain('1 of 2 run(s) left out');

    // Tollgate's own phase at 85%: with no run left to compare, N/A rather than a verdict.
    const none = goals(records([{ ...GOOD, halfLoad: 0.85 }]));
    expect(goal(none, 'p99 at half').status).toBe('N/A');

    // Just under the threshold the run counts, and here it fails.
    const counted = goals(records([{ ...GOOD, halfP99: 50, halfLoad: 0.79 }]));
    expect(goal(counted, 'p99 at half').status).toBe('FAIL');
  });

  it("leaves a run out of every comparison when the speed probe says the CPU's speed moved", () => {
    const steady = [10, 10.4, 10.1];
    const bare = (speed: number[]) => ({ ...BARE, speed });
    // Run 1: Tollgate measured while the CPU ran at half the bare proxy's speed (its figures show it);
    // runs 2 and 3 at one speed.
    const slow = { ...GOOD, rps: 2_000, cpu: 200, c1P50: 1, fixedP99: 9, halfP99: 90, speed: [20, 21, 20.5] };
    const results = goals(
      records(
        [slow, { ...GOOD, speed: steady }, { ...GOOD, speed: steady }],
        [bare(steady), bare(steady), bare(steady)],
      ),
    );
    const left = "1 of 3 run(s) left out: the CPU's speed moved by more than 20%";
    expect(goal(results, 'req/s at c50 ≥ 0.7×')).toMatchObject({
      status: 'PASS',
      value: `0.80× (per run 0.80 / 0.80) (${left})`,
    });
    expect(goal(results, 'gateway CPU')).toMatchObject({
      status: 'N/A',
      value: `1.30× (per run 1.30 / 1.30) (${left})`,
    });
    expect(goal(results, 'p99 at 200/s')).toMatchObject({ status: 'PASS', value: `+0.50 ms (${left})` });
    expect(goal(results, 'p99 at half').status).toBe('PASS');
    // The simulator was not probed here: the added p50 compares in every run (median 0.19 ms).
    expect(goal(results, 'unloaded added p50').status).toBe('PASS');

    // A speed that moved within Tollgate's own run (30% between two probes) leaves that run out too.
    const within = goals(records([{ ...GOOD, rps: 2_000, speed: [10, 13, 10] }], [bare(steady)]));
    expect(goal(within, 'req/s at c50 ≥ 0.7×')).toMatchObject({
      status: 'N/A',
      value: "1 of 1 run(s) left out: the CPU's speed moved by more than 20%",
    });
    expect(goal(within, 'gateway CPU').status).toBe('N/A');

    // Within 20%, inside a run and between the two targets, the run counts (and here it fails).
    const counted = goals(
      records([{ ...GOOD, rps: 2_000, speed: [10, 11.9, 10.5] }], [bare([10.5, 10, 10.2])]),
    );
    expect(goal(counted, 'req/s at c50 ≥ 0.7×')).toMatchObject({ status: 'FAIL', value: '0.20×' });
  });

  it('leaves a run out of the req/s and CPU ratios when the load CPU was saturated at c50 in either phase', () => {
    // Run 1: the bare proxy's c50 capped at 6,000 req/s by the load CPU (99% busy), its CPU per request
    // up; alone it would make Tollgate pass both goals. Runs 2 and 3 compare, and there it fails them.
    const capped = { ...BARE, rps: 6_000, cpu: 80, c50Load: 0.99 };
    const slow = { ...GOOD, rps: 6_000, cpu: 75 };
    const results = goals(records([slow, slow, slow], [capped, BARE, BARE]));
    const left = '1 of 3 run(s) left out: the load CPU ≥ 95% busy at c50';
    expect(goal(results, 'req/s at c50 ≥ 0.7×')).toMatchObject({
      status: 'FLOOR',
      value: `0.60× (per run 0.60 / 0.60) (${left})`,
    });
    expect(goal(results, 'gateway CPU')).toMatchObject({
      status: 'N/A',
      value: `1.50× (per run 1.50 / 1.50) (${left})`,
    });

    // Every run saturated: no verdict.
    const none = goals(records([slow], [capped]));
    expect(goal(none, 'req/s at c50 ≥ 0.7×')).toMatchObject({
      status: 'N/A',
      value: '1 of 1 run(s) left out: the load CPU ≥ 95% busy at c50',
    });
    expect(goal(none, 'gateway CPU').status).toBe('N/A');

    // Just under 95% the run counts.
    const counted = goals(records([slow], [{ ...capped, c50Load: 0.94 }]));
    expect(goal(counted, 'req/s at c50 ≥ 0.7×')).toMatchObject({ status: 'PASS', value: '1.00×' });
  });
});
