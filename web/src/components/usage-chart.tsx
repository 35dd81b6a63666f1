import { useId, useSyncExternalStore } from 'react';
import type { DailyUsage, DayTotals } from '../api';
import { PROVIDERS } from '../api';
import { compact, shortDay, tokens, usd } from '../format';

export type ChartMetric = 'cost' | 'tokens';

const PALETTE = ['#1d4ed8', '#0f766e', '#b45309', '#7c3aed', '#be123c', '#15803d', '#0369a1', '#a16207'];

export function providerColor(provider: string): string {
  const i = (PROVIDERS as readonly string[]).indexOf(provider);
  return i >= 0 ? (PALETTE[i] ?? '#64748b') : '#64748b';
}

function metricValue(t: DayTotals, metric: ChartMetric): number {
  return metric === 'cost' ? t.cost : t.prompt_tokens + t.completion_tokens;
}

function label(v: number, metric: ChartMetric): string {
  return metric === 'cost' ? usd(v) : compact(v);
}

/** A round number at or above `v`, for the top of the axis. */
function niceCeil(v: number): number {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

const NARROW = '(max-width: 600px)';

function subscribeNarrow(onChange: () => void): () => void {
  const query = window.matchMedia(NARROW);
  query.addEventListener('change', onChange);
  return () => query.removeEventListener('change', onChange);
}

/** Whether the screen is phone-narrow: the chart then draws on a smaller canvas, so its text stays legible. */
function useNarrow(): boolean {
  return useSyncExternalStore(subscribeNarrow, () => window.matchMedia(NARROW).matches);
}

const H = 240;
const LEFT = 64;
const RIGHT = 8;
const TOP = 12;
const BOTTOM = 28;

/** Spend or tokens per day, stacked by provider: a hand-drawn SVG, with a table for screen readers. */
export function UsageChart({ usage, metric }: { usage: DailyUsage; metric: ChartMetric }) {
  const W = useNarrow() ? 380 : 720;
  const titleId = useId();
  const descId = useId();
  const days = usage.days;
  const totals = days.map((d) => metricValue(d, metric));
  const max = niceCeil(Math.max(0, ...totals));
  const plotW = W - LEFT - RIGHT;
  const plotH = H - TOP - BOTTOM;
  const slot = plotW / Math.max(1, days.length);
  const barW = Math.max(2, slot * 0.7);
  // At most 8 day labels (5 on a phone's canvas), so `Nov 28` and its neighbour never touch.
  const every = Math.ceil(days.length / (W < 500 ? 5 : 8));
  const sum = totals.reduce((a, b) => a + b, 0);
  const what = metric === 'cost' ? 'Spend' : 'Tokens';

  return (
    <div className="chart">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-labelledby={`${titleId} ${descId}`}>
        <title id={titleId}>{`${what} per day by provider`}</title>
        <desc id={descId}>
          {`${what} over the last ${days.length} days (UTC): ${label(sum, metric)} in total.`}
        </desc>
        {[0, 0.5, 1].map((f) => {
          const y = TOP + plotH * (1 - f);
          return (
            <g key={f} className="grid">
              <line x1={LEFT} x2={W - RIGHT} y1={y} y2={y} />
              <text x={LEFT - 6} y={y + 4} textAnchor="end">
                {label(max * f, metric)}
              </text>
            </g>
          );
        })}
        {days.map((d, i) => {
          const x = LEFT + i * slot + (slot - barW) / 2;
          let y = TOP + plotH;
          return (
            <g key={d.date}>
              {usage.providers.map((p) => {
                const t = d.by_provider[p];
                if (!t) return null;
                const h = (metricValue(t, metric) / max) * plotH;
                y -= h;
                return (
                  <rect key={p} x={x} y={y} width={barW} height={Math.max(0, h)} fill={providerColor(p)}>
                    <title>{`${d.date} (UTC) · ${p}: ${metric === 'cost' ? usd(t.cost) : `${tokens(metricValue(t, metric))} tokens`}, ${t.requests} requests`}</title>
                  </rect>
                );
              })}
              {/* Counted from the last day, so the newest bar (today) always has its label. */}
              {(days.length - 1 - i) % every === 0 && (
                <text
                  className="axis"
                  x={x + barW / 2}
                  y={H - 8}
                  textAnchor={i === days.length - 1 ? 'end' : 'middle'}
                  dx={i === days.length - 1 ? barW / 2 : 0}
                >
                  {shortDay(d.date)}
                </text>
              )}
            </g>
          );
        })}
      </svg>
      {usage.providers.length > 0 ? (
        <ul className="legend" aria-label="Providers">
          {usage.providers.map((p) => (
            <li key={p}>
              <span className="swatch" style={{ background: providerColor(p) }} aria-hidden="true" />
              {p}
            </li>
          ))}
        </ul>
      ) : (
        <p className="hint">No requests in this period yet.</p>
      )}
      <details className="chart-table">
        <summary>Show the numbers as a table</summary>
        <div className="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Day (UTC)</th>
                <th scope="col" className="num">
                  Requests
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
              {days
                .filter((d) => d.requests > 0)
                .map((d) => (
                  <tr key={d.date}>
                    <td>{d.date}</td>
                    <td className="num">{tokens(d.requests)}</td>
                    <td className="num">{tokens(d.refused)}</td>
                    <td className="num">{tokens(d.prompt_tokens + d.completion_tokens)}</td>
                    <td className="num">{usd(d.cost)}</td>
                  </tr>
                ))}
            </tbody>
          </table>
        </div>
      </details>
    </div>
  );
}
