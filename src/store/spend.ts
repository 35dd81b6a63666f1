/**
 * An account's spend today and this month (UTC), kept on its row (migration 0008) so that reading it costs
 * one row, however many requests the account has made. Before, `GET /api/v1/key` and the dashboard's
 * summary summed the usage rows since the 1st of the month on every call, which held the event loop and
 * brought every row of the month into memory, as long as the account's requests were many.
 *
 * The counters mean what the sums meant: the charges of the requests *started* in that UTC day and month
 * (`usage.created_at`, as the dashboard's usage figures count them). Each settle adds its charge to the
 * counter of its request's day: to it when the counter is for that day, in place of it when the counter is
 * for an earlier day, and not at all when the counter is already for a later day (a request started before
 * midnight and settled after it counts for the day it started, which is no longer today). Months alike.
 */

import { type BigIntColumn, toNumber } from './schema.js';

const DAY_MS = 86_400_000;

/** The counters as stored: day = days since 1970-01-01 UTC, month = year × 12 + month index (UTC). */
export interface SpendCounters {
  spendDay: number;
  spendDayNano: number;
  spendMonth: number;
  spendMonthNano: number;
}

export const NO_SPEND: Readonly<SpendCounters> = Object.freeze({
  spendDay: 0,
  spendDayNano: 0,
  spendMonth: 0,
  spendMonthNano: 0,
});

/** The counters' columns on `accounts`. */
export const SPEND_COLUMNS = ['spend_day', 'spend_day_nano', 'spend_month', 'spend_month_nano'] as const;

type SpendRow = Record<(typeof SPEND_COLUMNS)[number], BigIntColumn>;

/** The counters of a row read with {@link SPEND_COLUMNS} (PostgreSQL gives BIGINT as strings). */
export function spendCountersOf(row: SpendRow): SpendCounters {
  return {
    spendDay: toNumber(row.spend_day),
    spendDayNano: toNumber(row.spend_day_nano),
    spendMonth: toNumber(row.spend_month),
    spendMonthNano: toNumber(row.spend_month_nano),
  };
}

/** The counters as the columns an UPDATE sets. */
export function spendColumns(counters: SpendCounters): SpendRow {
  return {
    spend_day: counters.spendDay,
    spend_day_nano: counters.spendDayNano,
    spend_month: counters.spendMonth,
    spend_month_nano: counters.spendMonthNano,
  };
}

export function spendDayOf(ms: number): number {
  return Math.floor(ms / DAY_MS);
}

/** The day {@link spendMonthOf} last computed a month for, and that month: every settle asks for one. */
let lastDay = Number.NaN;
let lastMonth = 0;

export function spendMonthOf(ms: number): number {
  const day = spendDayOf(ms);
  if (day !== lastDay) {
    const date = new Date(ms);
    lastMonth = date.getUTCFullYear() * 12 + date.getUTCMonth();
    lastDay = day;
  }
  return lastMonth;
}

/** When `now`'s UTC day and month began (epoch ms): the requests started since count in the counters. */
export function spendStarts(now: number): { dayStart: number; monthStart: number } {
  const date = new Date(now);
  return {
    dayStart: Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate()),
    monthStart: Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1),
  };
}

/** Adds a charge of a request started at `createdAt` to `counters` (in place), by the rule above. */
export function addSpend(counters: SpendCounters, chargedNano: number, createdAt: number): void {
  const day = spendDayOf(createdAt);
  if (day === counters.spendDay) counters.spendDayNano += chargedNano;
  else if (day > counters.spendDay) {
    counters.spendDay = day;
    counters.spendDayNano = chargedNano;
  }
  const month = spendMonthOf(createdAt);
  if (month === counters.spendMonth) counters.spendMonthNano += chargedNano;
  else if (month > counters.spendMonth) {
    counters.spendMonth = month;
    counters.spendMonthNano = chargedNano;
  }
}

/**
 * Today's and this month's spend at `now`. A counter for a later day or month than `now`'s (another
 * instance's clock a little ahead, around midnight) counts, as a usage row stamped by that clock would
 * have counted in the sum since the start of the day.
 */
export function spendAt(counters: SpendCounters, now: number): { todayNano: number; monthNano: number } {
  return {
    todayNano: counters.spendDay >= spendDayOf(now) ? counters.spendDayNano : 0,
    monthNano: counters.spendMonth >= spendMonthOf(now) ? counters.spendMonthNano : 0,
  };
}

/**
 * The same rule as one SQL SET list, for statements that change the row without reading it first
 * (PostgreSQL's single-statement settles). Each argument is an SQL expression: the charge to add to the
 * day's counter and that day (as {@link spendDayOf} gives it), then the month's. Every expression of a
 * SET list reads the row as it was before the UPDATE, on SQLite and PostgreSQL alike.
 */
export function spendSetSql(
  table: string,
  dayCharge: string,
  day: string,
  monthCharge: string,
  month: string,
): string {
  const counter = (unit: 'day' | 'month', charge: string, at: string) =>
    `spend_${unit}_nano = case when ${table}.spend_${unit} = ${at} then ${table}.spend_${unit}_nano + ${charge}` +
    ` when ${table}.spend_${unit} < ${at} then ${charge} else ${table}.spend_${unit}_nano end,` +
    ` spend_${unit} = case when ${table}.spend_${unit} < ${at} then ${at} else ${table}.spend_${unit} end`;
  return `${counter('day', dayCharge, day)}, ${counter('month', monthCharge, month)}`;
}
