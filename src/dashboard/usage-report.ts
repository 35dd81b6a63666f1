import { GatewayError } from '../errors.js';
import { nanoToUsd } from '../money/money.js';
import { isProviderName } from '../providers/types.js';
import type { RefusalTotalsRow, UsageTotalsQuery, UsageTotalsRow } from '../store/dashboard-types.js';
import { parseDay } from './usage-query.js';

const HOUR_MS = 3_600_000;
const QUARTER_MS = 900_000;
const DAY_MS = 86_400_000;
/** The longest range a report covers, per interval: a year of days, a month of hours. */
const MAX_BUCKETS = { day: 366, hour: 31 * 24 } as const;
const ID = /^[A-Za-z0-9_]{1,64}$/;

export type Interval = 'day' | 'hour';

/** The report's scope as asked: a day range in one time zone, its interval, and filters. */
export interface ReportScope {
  /** An IANA time zone name (`UTC`, `America/Los_Angeles`): days and hours are its days and hours. */
  zone: string;
  interval: Interval;
  /** The first and last day asked for, `YYYY-MM-DD` in `zone`. */
  fromDay: string;
  toDay: string;
  query: UsageTotalsQuery;
}

function invalid(param: string, message: string): GatewayError {
  return new GatewayError('invalid_request', message, { param });
}

/** A formatter of epoch ms as wall-clock parts in `zone`; throws 400 for a zone the runtime does not know. */
function zoneFormat(zone: string): Intl.DateTimeFormat {
  if (!/^[A-Za-z0-9_+\-/]{1,64}$/.test(zone))
    throw invalid('tz', '"tz" must be a time zone name, such as UTC.');
  try {
    return new Intl.DateTimeFormat('en-CA', {
      timeZone: zone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    });
  } catch {
    throw invalid('tz', `"tz" names no time zone known here: ${zone}.`);
  }
}

/** The wall-clock time in `format`'s zone of `t`, as if it were UTC (epoch ms). */
function wallClock(format: Intl.DateTimeFormat, t: number): number {
  const parts: Record<string, number> = {};
  for (const p of format.formatToParts(t)) if (p.type !== 'literal') parts[p.type] = Number(p.value);
  return Date.UTC(
    parts.year ?? 1970,
    (parts.month ?? 1) - 1,
    parts.day ?? 1,
    parts.hour ?? 0,
    parts.minute ?? 0,
  );
}

/** The instant the day `day` (`YYYY-MM-DD`) begins in the zone. */
function dayStart(format: Intl.DateTimeFormat, day: string, param: string): number {
  const midnight = parseDay(day, param);
  // Twice: the zone's offset at a first guess, then at the instant it gives (right across a change).
  let t = midnight - (wallClock(format, midnight) - midnight);
  t = midnight - (wallClock(format, t) - t);
  return t;
}

/**
 * The scope of a totals report from its query string: `from` and `to` (inclusive days in `tz`, default the
 * last 30 days), `interval` (`day`, default, or `hour`), `tz` (default `UTC`), and the filters.
 */
export function reportScope(q: Record<string, string | undefined>, now: number): ReportScope {
  const zone = q.tz ?? 'UTC';
  const format = zoneFormat(zone);
  const interval = q.interval ?? 'day';
  if (interval !== 'day' && interval !== 'hour') throw invalid('interval', '"interval" must be day or hour.');
  const today = new Date(wallClock(format, now)).toISOString().slice(0, 10);
  const toDay = q.to ?? today;
  const fromDay = q.from ?? new Date(parseDay(toDay, 'to') - 29 * DAY_MS).toISOString().slice(0, 10);
  const from = dayStart(format, fromDay, 'from');
  const toStart = parseDay(toDay, 'to');
  const to = dayStart(format, new Date(toStart + DAY_MS).toISOString().slice(0, 10), 'to');
  if (from >= to) throw invalid('to', '"to" must not be before "from".');
  const days = Math.round((toStart - parseDay(fromDay, 'from')) / DAY_MS) + 1;
  const buckets = interval === 'day' ? days : days * 24;
  if (buckets > MAX_BUCKETS[interval]) {
    const most = interval === 'day' ? '366 days' : '31 days';
    throw invalid(
      'from',
      `The range is too long for ${interval === 'day' ? 'daily' : 'hourly'} totals: at most ${most}.`,
    );
  }
  // A zone offset by a part of an hour (India, Nepal…) needs quarter-hour buckets to cut its hours and days.
  const whole = [from, to].every((t) => (wallClock(format, t) - t) % HOUR_MS === 0);
  const query: UsageTotalsQuery = { from, to, bucketMs: whole ? HOUR_MS : QUARTER_MS };
  if (q.key_id !== undefined) {
    if (!ID.test(q.key_id)) throw invalid('key_id', '"key_id" is not a key id.');
    query.keyId = q.key_id;
  }
  if (q.provider !== undefined) {
    if (!isProviderName(q.provider)) throw invalid('provider', '"provider" is not a provider name.');
    query.provider = q.provider;
  }
  if (q.model !== undefined) {
    if (q.model.length === 0 || q.model.length > 200) throw invalid('model', '"model" is not a model name.');
    query.model = q.model;
  }
  return { zone, interval, fromDay, toDay, query };
}

interface Totals {
  requests: number;
  errors: number;
  refused: number;
  prompt_tokens: number;
  completion_tokens: number;
  costNano: number;
}

function empty(): Totals {
  return { requests: 0, errors: 0, refused: 0, prompt_tokens: 0, completion_tokens: 0, costNano: 0 };
}

function add(t: Totals, r: UsageTotalsRow): void {
  t.requests += r.requests;
  if (r.status !== 'ok') t.errors += r.requests;
  t.prompt_tokens += r.promptTokens;
  t.completion_tokens += r.completionTokens;
  t.costNano += r.costNano;
}

/** Totals as the API shows them: `cost` in USD, exact to the nanodollar, and `cost_nano` beside it. */
function shown({ costNano, ...rest }: Totals) {
  return { ...rest, cost: nanoToUsd(costNano), cost_nano: costNano };
}

function grouped<N extends string>(map: Map<string, Totals>, name: N) {
  return [...map.entries()]
    .map(([key, t]) => ({ ...({ [name]: key } as Record<N, string>), ...shown(t) }))
    .sort((a, b) => b.cost_nano - a.cost_nano || b.requests - a.requests);
}

function into(map: Map<string, Totals>, key: string): Totals {
  let t = map.get(key);
  if (!t) {
    t = empty();
    map.set(key, t);
  }
  return t;
}

/**
 * Rolls the totals' rows up into the report: a series of the interval's buckets in the zone (every bucket
 * of the range, empty ones included), the whole range's totals, and the totals by account, key, provider
 * and model; refused requests counted beside them, by reason. `requests` counts served and failed calls;
 * `refused` those refused before any hold.
 */
export function rollUp(scope: ReportScope, rows: UsageTotalsRow[], refusals: RefusalTotalsRow[]) {
  const format = zoneFormat(scope.zone);
  const width = scope.interval === 'day' ? 10 : 13;
  const labelOf = (t: number) => {
    const wall = new Date(wallClock(format, t)).toISOString();
    return scope.interval === 'day' ? wall.slice(0, width) : `${wall.slice(0, width)}:00`;
  };
  const series = new Map<string, { start: number; t: Totals }>();
  const { from, to, bucketMs } = scope.query;
  for (let t = from; t < to; t += bucketMs) {
    const label = labelOf(t);
    if (!series.has(label)) series.set(label, { start: t, t: empty() });
  }
  const total = empty();
  const by = {
    account: new Map<string, Totals>(),
    key: new Map<string, Totals>(),
    provider: new Map<string, Totals>(),
    model: new Map<string, Totals>(),
  };
  for (const r of rows) {
    for (const t of [
      total,
      series.get(labelOf(r.bucket))?.t,
      into(by.account, r.accountId),
      into(by.key, r.keyId),
      into(by.provider, r.provider ?? 'none'),
      into(by.model, r.model ?? 'none'),
    ]) {
      if (t) add(t, r);
    }
  }
  const reasons = new Map<string, number>();
  for (const r of refusals) {
    for (const t of [
      total,
      series.get(labelOf(r.bucket))?.t,
      into(by.account, r.accountId),
      into(by.key, r.keyId),
    ]) {
      if (t) t.refused += r.requests;
    }
    reasons.set(r.reason, (reasons.get(r.reason) ?? 0) + r.requests);
  }
  return {
    time_zone: scope.zone,
    interval: scope.interval,
    from: scope.fromDay,
    to: scope.toDay,
    totals: shown(total),
    series: [...series.entries()].map(([label, b]) => ({
      label,
      start: new Date(b.start).toISOString(),
      ...shown(b.t),
    })),
    by_account: grouped(by.account, 'account_id'),
    by_key: grouped(by.key, 'key_id'),
    by_provider: grouped(by.provider, 'provider'),
    by_model: grouped(by.model, 'model'),
    refused: [...reasons.entries()].map(([reason, requests]) => ({ reason, requests })),
  };
}

export type UsageReport = ReturnType<typeof rollUp>;
