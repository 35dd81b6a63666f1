/**
 * Every amount of money is shown one way: dollars with thousands separators and exactly six decimals
 * (to the micro-dollar), so a column of costs lines up and a balance and a cost read alike:
 * `$4.994042`, `$0.000132`, `$0.000000`. `usdExact` keeps up to nine (nanodollars, the unit balances
 * are kept in) where an exact figure matters: a grant's confirmation.
 */
export function usd(amount: number): string {
  return `$${amount.toLocaleString('en-US', { minimumFractionDigits: 6, maximumFractionDigits: 6 })}`;
}

export function usdExact(amount: number): string {
  return `$${amount.toLocaleString('en-US', { minimumFractionDigits: 6, maximumFractionDigits: 9 })}`;
}

/**
 * A decimal string typed by a user (`"0999999.123456789"`) in the same style, digit for digit (no float
 * rounding): `$999,999.123456789`. Undefined when it is not a plain decimal.
 */
export function usdFromInput(text: string): string | undefined {
  const m = /^(\d+)(?:\.(\d{1,9}))?$/.exec(text.trim());
  if (!m) return undefined;
  const whole = (m[1] ?? '0').replace(/^0+(?=\d)/, '').replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const fraction = (m[2] ?? '').replace(/0+$/, '').padEnd(6, '0');
  return `$${whole}.${fraction}`;
}

export function tokens(n: number): string {
  return n.toLocaleString('en-US');
}

/** Short tokens for axes: 1.2k, 3.4M. */
export function compact(n: number): string {
  return n.toLocaleString('en-US', { notation: 'compact', maximumFractionDigits: 1 });
}

/**
 * Every time is shown in UTC and says so, like the day filters and the per-day chart, which count UTC
 * days: `Dec 1, 23:05:02 UTC`, with the year when it is not this year; `Never` for null.
 */
export function dateTime(iso: string | null): string {
  if (iso === null) return 'Never';
  const d = new Date(iso);
  const thisYear = d.getUTCFullYear() === new Date().getUTCFullYear();
  const text = d.toLocaleString('en-US', {
    ...(thisYear ? {} : { year: 'numeric' }),
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    hourCycle: 'h23',
    timeZone: 'UTC',
  });
  return `${text} UTC`;
}

/** The UTC day of an instant: `Dec 1, 2024`. */
export function date(iso: string): string {
  return new Date(iso).toLocaleDateString('en-US', {
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    timeZone: 'UTC',
  });
}

/** A `YYYY-MM-DD` day as `Dec 1` (for the chart's axis). */
export function shortDay(day: string): string {
  return new Date(`${day}T00:00:00Z`).toLocaleDateString('en-US', {
    month: 'short',
    day: 'numeric',
    timeZone: 'UTC',
  });
}

export function percent(rate: number | null): string {
  return rate === null ? '—' : `${(rate * 100).toFixed(rate > 0 && rate < 0.01 ? 2 : 1)}%`;
}

export function durationMs(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(2)} s`;
}

/** A key as a person tells keys apart: its name and its hint, `laptop (sk-svc-1a2b…9f0e)`. */
export function keyLabel(key: { name: string | null; hint: string | null; id: string }): string {
  if (key.name === null) return key.hint ?? key.id;
  return key.hint ? `${key.name} (${key.hint})` : key.name;
}
