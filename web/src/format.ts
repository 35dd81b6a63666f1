/** Dollars with at least 2 and at most `maxDigits` decimals: `$9.999976`, `$0.00002408`. */
export function usd(amount: number, maxDigits = 6): string {
  const digits = amount !== 0 && Math.abs(amount) < 0.01 ? Math.max(maxDigits, 8) : maxDigits;
  return `$${amount.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: digits })}`;
}

export function tokens(n: number): string {
  return n.toLocaleString('en-US');
}

/** Short tokens for axes: 1.2k, 3.4M. */
export function compact(n: number): string {
  return n.toLocaleString('en-US', { notation: 'compact', maximumFractionDigits: 1 });
}

/** `Nov 23, 14:05:09`, with the year when it is not this year; `Never` for null. */
export function dateTime(iso: string | null): string {
  if (iso === null) return 'Never';
  const d = new Date(iso);
  const thisYear = d.getFullYear() === new Date().getFullYear();
  return d.toLocaleString('en-US', {
    ...(thisYear ? {} : { year: 'numeric' }),
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    hourCycle: 'h23',
  });
}

export function date(iso: string): string {
  return new Date(iso).toLocaleDateString('en-US', { year: 'numeric', month: 'short', day: 'numeric' });
}

export function percent(rate: number | null): string {
  return rate === null ? '—' : `${(rate * 100).toFixed(rate > 0 && rate < 0.01 ? 2 : 1)}%`;
}

export function durationMs(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(2)} s`;
}
