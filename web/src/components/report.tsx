import { type FormEvent, useState } from 'react';
import type { ReportTotals, UsageReport } from '../api';
import { compact, tokens, usd } from '../format';
import { navigate, useLocation } from '../router';

/** The browser's own time zone, offered beside UTC. */
export function browserZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
}

/** The report parameters kept in the page's URL: the day range, the interval and the time zone. */
export function useReportParams(extra: readonly string[] = []): Record<string, string | undefined> {
  const { search } = useLocation();
  const out: Record<string, string | undefined> = {};
  for (const name of ['from', 'to', 'interval', 'tz', ...extra]) out[name] = search.get(name) ?? undefined;
  return out;
}

/** The URL of `path` with `params` (unset and empty ones left out). */
export function withParams(path: string, params: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) q.set(k, v);
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

/** The range, interval and zone of a report; applying them rewrites the URL (so a link keeps them). */
export function ReportControls({ path, report }: { path: string; report: UsageReport | undefined }) {
  const { search } = useLocation();
  const [from, setFrom] = useState(search.get('from') ?? report?.from ?? '');
  const [to, setTo] = useState(search.get('to') ?? report?.to ?? '');
  const [interval, setInterval] = useState(search.get('interval') ?? 'day');
  const [tz, setTz] = useState(search.get('tz') ?? 'UTC');
  const [error, setError] = useState<string>();
  const local = browserZone();

  function apply(e: FormEvent) {
    e.preventDefault();
    if (from && to && from > to) {
      setError('The end date is before the start date.');
      return;
    }
    setError(undefined);
    const params: Record<string, string | undefined> = {};
    for (const [k, v] of search) params[k] = v;
    navigate(withParams(path, { ...params, from, to, interval, tz }));
  }

  return (
    <form className="filters inline-form" onSubmit={apply} aria-label="Report range">
      <div className="field">
        <label htmlFor="rp-from">Totals from</label>
        <input id="rp-from" type="date" value={from} onChange={(e) => setFrom(e.target.value)} />
      </div>
      <div className="field">
        <label htmlFor="rp-to">Totals to</label>
        <input id="rp-to" type="date" value={to} onChange={(e) => setTo(e.target.value)} />
      </div>
      <div className="field">
        <label htmlFor="rp-interval">Totals per</label>
        <select id="rp-interval" value={interval} onChange={(e) => setInterval(e.target.value)}>
          <option value="day">Day</option>
          <option value="hour">Hour</option>
        </select>
      </div>
      <div className="field">
        <label htmlFor="rp-tz">Time zone</label>
        <select id="rp-tz" value={tz} onChange={(e) => setTz(e.target.value)}>
          <option value="UTC">UTC</option>
          {local !== 'UTC' && <option value={local}>{local} (this browser)</option>}
        </select>
      </div>
      <div className="field actions-field">
        <button type="submit" className="button primary">
          Show
        </button>
      </div>
      {error && (
        <p className="notice error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}

/** The range's totals as cards. */
export function ReportCards({ report }: { report: UsageReport }) {
  const t = report.totals;
  return (
    <div className="cards">
      <div className="card">
        <span className="hint">Spend</span>
        <span className="big" data-testid="report-spend">
          {usd(t.cost)}
        </span>
      </div>
      <div className="card">
        <span className="hint">Calls</span>
        <span className="big" data-testid="report-calls">
          {tokens(t.requests)}
        </span>
        <span className="of">
          {tokens(t.errors)} failed · {tokens(t.refused)} refused
        </span>
      </div>
      <div className="card">
        <span className="hint">Tokens</span>
        <span className="big">{compact(t.prompt_tokens + t.completion_tokens)}</span>
        <span className="of">
          {tokens(t.prompt_tokens)} in · {tokens(t.completion_tokens)} out
        </span>
      </div>
    </div>
  );
}

/** Spend per bucket as bars; the same figures are in the table below it for screen readers. */
export function ReportChart({ report }: { report: UsageReport }) {
  const max = Math.max(...report.series.map((b) => b.cost), 0);
  const width = 640;
  const height = 160;
  const step = width / Math.max(report.series.length, 1);
  return (
    <figure className="panel">
      <figcaption>
        Spend per {report.interval} · times in {report.time_zone}
      </figcaption>
      <svg
        viewBox={`0 0 ${width} ${height}`}
        width="100%"
        role="img"
        aria-label={`Spend per ${report.interval}`}
      >
        {report.series.map((b, i) => {
          const h = max > 0 ? (b.cost / max) * (height - 4) : 0;
          return (
            <rect
              key={b.label}
              x={i * step + step * 0.1}
              y={height - h}
              width={step * 0.8}
              height={h}
              className="report-bar"
            >
              <title>
                {b.label}: {usd(b.cost)}, {b.requests} calls
              </title>
            </rect>
          );
        })}
      </svg>
    </figure>
  );
}

/** One breakdown: its entries' calls, tokens and spend, largest spend first. */
export function Breakdown({
  title,
  column,
  rows,
}: {
  title: string;
  column: string;
  rows: (ReportTotals & { label: string; key: string })[];
}) {
  return (
    <section className="panel" aria-label={title}>
      <h2>{title}</h2>
      {rows.length === 0 ? (
        <p className="hint">No calls in this range.</p>
      ) : (
        // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must take focus (WCAG 2.1.1).
        <div className="table-wrap" tabIndex={0}>
          <table>
            <thead>
              <tr>
                <th scope="col">{column}</th>
                <th scope="col" className="num">
                  Calls
                </th>
                <th scope="col" className="num">
                  Refused
                </th>
                <th scope="col" className="num">
                  Tokens
                </th>
                <th scope="col" className="num">
                  Spend
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={r.key}>
                  <td data-label={column}>{r.label}</td>
                  <td className="num" data-label="Calls">
                    {tokens(r.requests)}
                  </td>
                  <td className="num" data-label="Refused">
                    {tokens(r.refused)}
                  </td>
                  <td className="num" data-label="Tokens">
                    {tokens(r.prompt_tokens + r.completion_tokens)}
                  </td>
                  <td className="num" data-label="Spend">
                    {usd(r.cost)}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

/** Requests refused before any hold, by reason. */
export function RefusedList({ report }: { report: UsageReport }) {
  if (report.refused.length === 0) return null;
  return (
    <section className="panel" aria-label="Refused calls">
      <h2>Refused calls</h2>
      <ul>
        {report.refused.map((r) => (
          <li key={r.reason}>
            <code>{r.reason}</code>: {tokens(r.requests)}
          </li>
        ))}
      </ul>
    </section>
  );
}
