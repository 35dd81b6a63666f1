/**
 * What `npm run bench:stream` measures of each streamed answer, and its goals (no side effects). An event
 * ends at its blank line; TTFB runs from the send to the first `data:` bytes; a gap is the time between
 * consecutive events (0 within one read).
 *
 * @see https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation
 */
import { NANO_PER_USD } from '../src/money/money.js';
import type { GoalResult } from './report.js';
import type { LatencySummary, Samples } from './stats.js';

const LF = 0x0a;
const BLANK_LINE = Buffer.from('\n\n');
const DATA = Buffer.from('data:');
/** Bytes of the stream's end kept to read the bill and `[DONE]` from: a bill chunk is well under 1 KB. */
const TAIL_BYTES = 4096;

/** The timing of one streamed answer, fed its body's chunks as they arrive. */
export class StreamTimer {
  /** ms from the send to the chunk holding the first `data:` bytes; undefined until one came. */
  ttfbMs: number | undefined;
  /** Events completed so far. */
  events = 0;
  private lastEventAt = 0;
  /** Whether the last chunk ended with a line feed that may start a blank line with the next chunk. */
  private openLf = false;
  private readonly tail: Buffer[] = [];
  private tailBytes = 0;

  constructor(
    private readonly sentAt: number,
    /** Where the gaps go: one buffer per phase, shared by its streams. */
    private readonly gaps: Samples,
  ) {}

  onChunk(chunk: Buffer, now: number): void {
    if (chunk.length === 0) return;
    if (this.ttfbMs === undefined && chunk.includes(DATA)) this.ttfbMs = now - this.sentAt;
    let ends = 0;
    let from = 0;
    if (this.openLf && chunk[0] === LF) {
      ends++;
      from = 1;
    }
    for (let at = chunk.indexOf(BLANK_LINE, from); at >= 0; at = chunk.indexOf(BLANK_LINE, from)) {
      ends++;
      from = at + 2;
    }
    this.openLf = from < chunk.length && chunk[chunk.length - 1] === LF;
    for (let i = 0; i < ends; i++) {
      if (this.events > 0) this.gaps.add(i === 0 ? now - this.lastEventAt : 0);
      this.events++;
    }
    if (ends > 0) this.lastEventAt = now;
    this.tail.push(chunk);
    this.tailBytes += chunk.length;
    while (this.tail.length > 1 && this.tailBytes - (this.tail[0] as Buffer).length >= TAIL_BYTES) {
      this.tailBytes -= (this.tail.shift() as Buffer).length;
    }
  }

  /** The last few KB of the body as text (it may start inside an event). */
  tailText(): string {
    return Buffer.concat(this.tail, this.tailBytes).toString('utf8');
  }
}

/** How a stream ended, read from its last bytes. */
export interface StreamEnding {
  /** The last event is `data: [DONE]`. */
  done: boolean;
  /** `meta.cost.total` of Tollgate's bill chunk (`choices: []` with `meta`), in nanodollars. */
  costNano?: number;
  /** `meta.balance` of the bill chunk, in nanodollars. */
  balanceNano?: number;
  /** The message of an error event (`data: {"error": …}`), if the stream carried one. */
  error?: string;
}

/**
 * USD as Tollgate writes it (`nanoToUsd`, the correctly rounded quotient) back to integer nanodollars.
 * Exact for amounts below 2^51 nanodollars (over two million dollars): the two roundings of the division
 * and of this product together stay under half a nanodollar there.
 */
export function usdToNano(usd: number): number {
  return Math.round(usd * NANO_PER_USD);
}

export function readEnding(tail: string): StreamEnding {
  const datas: string[] = [];
  for (const event of tail.split('\n\n')) {
    const line = event.split('\n').find((l) => l.startsWith('data:'));
    if (line !== undefined) datas.push(line.slice(5).trim());
  }
  const ending: StreamEnding = { done: datas[datas.length - 1] === '[DONE]' };
  for (const data of datas) {
    if (!data.startsWith('{')) continue;
    let parsed: { error?: { message?: unknown }; meta?: { cost?: { total?: unknown }; balance?: unknown } };
    try {
      parsed = JSON.parse(data) as typeof parsed;
    } catch {
      continue; // the tail began inside this event
    }
    if (parsed.error !== undefined) ending.error = String(parsed.error.message ?? 'error event');
    const total = parsed.meta?.cost?.total;
    if (typeof total === 'number') ending.costNano = usdToNano(total);
    if (typeof parsed.meta?.balance === 'number') ending.balanceNano = usdToNano(parsed.meta.balance);
  }
  return ending;
}

// ── goals ────────────────────────────────────────────────────────────────────

/** A target's figures of one phase, as the report and the goals read them. */
export interface PhaseFigures {
  streams: number;
  errors: number;
  ttfb: LatencySummary;
  gaps: LatencySummary;
}

export interface StreamGoalInput {
  /** The latency phase of each target (undefined when it did not run). */
  bare: PhaseFigures | undefined;
  tollgate: PhaseFigures | undefined;
  /** Tollgate's concurrency phase: its streams, errors and peak RSS. */
  concurrent?: { streams: number; errors: number; peakRssMb: number | undefined };
  /**
   * Sum of the bill chunks' `meta.cost.total` and the balances' fall over the same streams, nanodollars;
   * the streams that ended without a bill (failed ones: counted as errors, shown with the billing).
   */
  billing?: { billedNano: number; balanceChangeNano: number; streamsWithoutBill: number };
  /** `bin/tollgate ledger check`'s verdict (undefined: not run). */
  ledgerOk?: boolean | undefined;
}

export const GOALS = {
  addedTtfbP50Ms: 1,
  addedGapP99Ms: 2,
  peakRssMb: 250,
} as const;

/** `a − b` when both are finite numbers. */
export function added(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) ? undefined : a - b;
}

function signed(v: number, digits: number): string {
  return `${v >= 0 ? '+' : ''}${v.toFixed(digits)}`;
}

/** The goals for streaming, as PASS / FAIL / N/A lines (`renderGoals` prints them). */
export function streamGoals(input: StreamGoalInput, concurrentStreams: number): GoalResult[] {
  const out: GoalResult[] = [];
  const add = (goal: string, ok: boolean | undefined, value: string) =>
    out.push({ target: 'sqlite', goal, status: ok === undefined ? 'N/A' : ok ? 'PASS' : 'FAIL', value });
  const { bare, tollgate } = input;
  const pair = (pick: (p: PhaseFigures) => number) =>
    bare && tollgate ? ` (Tollgate ${pick(tollgate).toFixed(2)}, bare ${pick(bare).toFixed(2)})` : '';

  const ttfb = added(tollgate?.ttfb.p50, bare?.ttfb.p50);
  add(
    `added time to first byte, p50, over the bare streaming proxy ≤ ${GOALS.addedTtfbP50Ms} ms`,
    ttfb === undefined ? undefined : ttfb <= GOALS.addedTtfbP50Ms,
    ttfb === undefined ? 'needs both targets' : `${signed(ttfb, 2)} ms${pair((p) => p.ttfb.p50)}`,
  );
  const gap = added(tollgate?.gaps.p99, bare?.gaps.p99);
  add(
    `added inter-chunk gap, p99, over the bare streaming proxy ≤ ${GOALS.addedGapP99Ms} ms`,
    gap === undefined ? undefined : gap <= GOALS.addedGapP99Ms,
    gap === undefined ? 'needs both targets' : `${signed(gap, 2)} ms${pair((p) => p.gaps.p99)}`,
  );

  const c = input.concurrent;
  add(
    `no errors at ${concurrentStreams} concurrent streams`,
    c === undefined ? undefined : c.errors === 0,
    c === undefined ? 'not measured' : `${c.errors} of ${c.streams} streams`,
  );
  add(
    `peak RSS at ${concurrentStreams} concurrent streams ≤ ${GOALS.peakRssMb} MB`,
    c?.peakRssMb === undefined ? undefined : c.peakRssMb <= GOALS.peakRssMb,
    c?.peakRssMb === undefined ? 'not measured' : `${c.peakRssMb.toFixed(0)} MB`,
  );
  const b = input.billing;
  add(
    "billing exact: Σ meta.cost.total of the bill chunks = the accounts' balance change",
    b === undefined ? undefined : b.billedNano === b.balanceChangeNano,
    b === undefined
      ? 'not measured'
      : `billed ${b.billedNano} n$, balances fell ${b.balanceChangeNano} n$` +
          (b.streamsWithoutBill > 0 ? `, ${b.streamsWithoutBill} stream(s) without a bill` : ''),
  );
  add(
    '`tollgate ledger check` clean',
    input.ledgerOk,
    input.ledgerOk === undefined ? 'not run' : input.ledgerOk ? 'OK' : 'problems (see the JSON)',
  );
  return out;
}
