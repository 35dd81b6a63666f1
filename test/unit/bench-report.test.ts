import { describe, expect, it } from 'vitest';
import type { ClosedResult, OpenResult } from '../../bench/loadgen.js';
import type { RunMetrics } from '../../bench/measure.js';
import {
  evaluateGoals,
  type GoalResult,
  type RunRecord,
  renderTable,
  summarize,
} from '../../bench/report.js';
import type { TargetName } from '../../bench/target-names.js';

// `npm run bench` prints its goals as PASS / FAIL / N/A from these two functions, and
// docs/performance.md lists them: each rule is checked here on runs built by hand.

interface Figures {
  rps: number;
  c1P50: number;
  fixedP99: number;
  cpu: number;
  rss: number;
  /** The median x-tollgate-overhead-ms, µs (Tollgate only). */
  header?: number;
  /** How busy the load CPU was in the c50 phase (0..1). */
  c50Load?: number;
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
    cpuUsPerReq: f.cpu,
    dbCpuUsPerReq: undefined,
    peakRssMb: f.rss,
    overheadHeaderUs: f.header,
    errorRate: 0,
  };
}

const SIM: Figures = { rps: 20_000, c1P50: 0.06, fixedP99: 1, cpu: 40, rss: 200 };
const BARE: Figures = { rps: 10_000, c1P50: 0.13, fixedP99: 2, cpu: 50, rss: 120 };

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

const GOOD: Figures = { rps: 7_000, c1P50: 0.25, fixedP99: 2.5, cpu: 65, rss: 140 };

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
    expect(goal(results, 'req/s at c50 ≥ 0.6×')).toMatchObject({
      status: 'PASS',
      value: '0.60× (per run 0.80 / 0.40 / 0.60)',
    });
    expect(goal(results, 'CPU per call ≤ 1.8×')).toMatchObject({
      status: 'PASS',
      value: '1.30× (per run 1.30 / 1.30 / 1.30)',
    });
  });

  it('passes every goal the figures meet and says what a missing peer would have measured', () => {
    const results = goals(records([GOOD, GOOD, GOOD]));
    expect(results.map((g) => [g.goal.slice(0, 12), g.status])).toEqual([
      ['req/s at c50', 'PASS'],
      ['CPU per call', 'PASS'],
      ['unloaded add', 'PASS'],
      ['p99 at 200/s', 'PASS'],
      ['req/s at c50', 'N/A'],
      ['peak RSS und', 'PASS'],
    ]);
    expect(goal(results, "req/s at c50 ≥ 8× Portkey's").value).toMatch(/npm install --no-save @portkey-ai/);
    const alone = evaluateGoals(
      summarize(
        ['sqlite'],
        records([GOOD]).filter((r) => r.target === 'sqlite'),
        new Map(),
        200,
      ),
    );
    expect(goal(alone, 'req/s at c50').value).toMatch(/no bare proxy in this run/);
  });

  it('fails the goals the figures miss', () => {
    const bad = { ...GOOD, rps: 5_000, cpu: 95, c1P50: 1.2, fixedP99: 4, rss: 160 };
    const results = goals(records([bad, bad, bad], undefined, [SIM, SIM, SIM]));
    expect(goal(results, 'req/s at c50 ≥ 0.6×')).toMatchObject({
      status: 'FAIL',
      value: '0.50× (per run 0.50 / 0.50 / 0.50)',
    });
    expect(goal(results, 'CPU per call')).toMatchObject({
      status: 'FAIL',
      value: '1.90× (per run 1.90 / 1.90 / 1.90)',
    });
    expect(goal(results, 'unloaded added p50').status).toBe('FAIL');
    expect(goal(results, 'p99 at 200/s')).toMatchObject({ status: 'FAIL', value: '+2.00 ms' });
    expect(goal(results, "req/s at c50 ≥ 8× Portkey's")).toMatchObject({ status: 'FAIL', value: '0.3×' });
    expect(goal(results, 'peak RSS')).toMatchObject({ status: 'FAIL', value: '160 MB' });
  });

  it('uses every run and names a saturated load CPU in a caveat beside the figures', () => {
    const saturated = { ...GOOD, rps: 9_000, c50Load: 0.97 };
    const recs = records([saturated, GOOD, GOOD]);
    const [, , sqlite] = summarize(['sim', 'bare', 'sqlite'], recs, new Map(), 200);
    // The saturated run still counts: 0.9 / 0.7 / 0.7.
    expect(sqlite?.rpsVsBareRuns).toEqual([0.9, 0.7, 0.7]);
    expect(sqlite?.rpsVsBare).toBeCloseTo(0.7, 10);
    expect(sqlite?.caveats.join('\n')).toMatch(/in 1 of 3 run\(s\) the load CPU .* ≥ 95% busy at c50/);
    expect(sqlite?.caveats.join('\n')).toMatch(/moved by 0\.20 between runs/);
    const table = renderTable(summarize(['sim', 'bare', 'sqlite'], recs, new Map(), 200));
    expect(table).toMatch(/caveat: \(3\) Tollgate · SQLite: in 1 of 3 run/);
  });

  it("reports the median x-tollgate-overhead-ms beside the added latency, 'none' without the header", () => {
    const recs = records([100, 140, 120].map((header) => ({ ...GOOD, header })));
    const summaries = summarize(['sim', 'bare', 'sqlite'], recs, new Map(), 200);
    expect(summaries[2]?.overheadHeaderUs).toBe(120);
    const rows = renderTable(summaries).split('\n');
    expect(rows.find((r) => r.startsWith('(3)'))).toMatch(/ 120 /);
    expect(rows.find((r) => r.startsWith('(2)'))).toMatch(/ none /);
  });

  it('shows an unavailable target with its reason, and the others in full', () => {
    const summaries = summarize(
      ['sim', 'bare', 'sqlite', 'postgres'],
      records([GOOD]),
      new Map([['postgres', 'PostgreSQL at 127.0.0.1: connection refused']]),
      200,
    );
    const table = renderTable(summaries);
    expect(table).toMatch(
      /Tollgate · PostgreSQL \+ Redis {2}unavailable: PostgreSQL at 127\.0\.0\.1: connection refused/,
    );
    expect(table).not.toMatch(/—/);
    expect(evaluateGoals(summaries).filter((g) => g.target === 'postgres')).toEqual([]);
  });
});
