import { useState } from 'react';
import { api, type DailyUsage, type KeyList, PROVIDERS, query, type UsageEntry } from '../api';
import { LoadError } from '../components/notice';
import { UsageBreakdown, UsageViews } from '../components/usage-breakdown';
import { type ChartMetric, UsageChart } from '../components/usage-chart';
import { dateTime, durationMs, keyLabel, tokens, usd } from '../format';
import { useLocation } from '../router';
import { useLoad } from '../use-load';

const PAGE_SIZE = 25;

interface Filters {
  key_id: string;
  provider: string;
  status: string;
  from: string;
  to: string;
}

const NO_FILTERS: Filters = { key_id: '', provider: '', status: '', from: '', to: '' };

function sameFilters(a: Filters, b: Filters): boolean {
  return (Object.keys(a) as (keyof Filters)[]).every((k) => a[k] === b[k]);
}

/** What is wrong with the day range, in the form's words; undefined when it can be asked for. */
function rangeProblem(f: Filters): string | undefined {
  if (f.from && f.to && f.from > f.to) {
    return `“From” (${f.from}) is after “To” (${f.to}): choose a From day on or before the To day.`;
  }
  return undefined;
}

function ChartSection() {
  const [days, setDays] = useState(30);
  const [metric, setMetric] = useState<ChartMetric>('cost');
  const daily = useLoad(() => api<DailyUsage>('GET', `/usage/daily${query({ days })}`), `daily-${days}`);
  return (
    <section className="panel" aria-labelledby="chart-heading">
      <div className="panel-head">
        <h2 id="chart-heading">Per day (UTC)</h2>
        <div className="chart-controls">
          <fieldset className="segmented">
            <legend className="visually-hidden">Show</legend>
            {(['cost', 'tokens'] as const).map((m) => (
              <label key={m} className={metric === m ? 'checked' : undefined}>
                <input
                  type="radio"
                  name="metric"
                  value={m}
                  checked={metric === m}
                  onChange={() => setMetric(m)}
                />
                {m === 'cost' ? 'Spend' : 'Tokens'}
              </label>
            ))}
          </fieldset>
          <label htmlFor="chart-days" className="visually-hidden">
            Period
          </label>
          <select id="chart-days" value={days} onChange={(e) => setDays(Number(e.target.value))}>
            <option value={7}>Last 7 days</option>
            <option value={30}>Last 30 days</option>
            <option value={90}>Last 90 days</option>
          </select>
        </div>
      </div>
      <LoadError loaded={daily} what="the chart" />
      {daily.loading && !daily.data && (
        <p className="hint" aria-busy="true">
          Loading…
        </p>
      )}
      {daily.data && <UsageChart usage={daily.data} metric={metric} />}
    </section>
  );
}

export function UsagePage() {
  const keys = useLoad(() => api<KeyList>('GET', '/keys'), 'keys');
  const view = useLocation().search.get('view') === 'totals' ? 'totals' : 'requests';
  const [draft, setDraft] = useState<Filters>(NO_FILTERS);
  const [filters, setFilters] = useState<Filters>(NO_FILTERS);
  // A problem with the filters as shown: the list is hidden (its rows are not what the form asks for).
  const [problem, setProblem] = useState<string>();
  // The cursors of the pages before the current one (for "Newer"), and the current one.
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors[cursors.length - 1];
  const params = { ...filters, limit: PAGE_SIZE, cursor };
  const page = useLoad(
    () => api<{ data: UsageEntry[]; next_cursor: string | null }>('GET', `/usage${query(params)}`),
    JSON.stringify(params),
  );

  function set<K extends keyof Filters>(name: K, value: string) {
    setDraft((d) => ({ ...d, [name]: value }));
  }

  /** Applies the filters as shown; false (and the reason shown) when they cannot be. */
  function apply(): boolean {
    const wrong = rangeProblem(draft);
    setProblem(wrong);
    if (wrong) return false;
    if (!sameFilters(draft, filters)) {
      setFilters(draft);
      setCursors([]);
    }
    return true;
  }

  if (view === 'totals') {
    return (
      <>
        <UsageViews view={view} />
        <UsageBreakdown />
      </>
    );
  }
  return (
    <>
      <UsageViews view={view} />
      <ChartSection />
      <section className="panel" aria-labelledby="requests-heading">
        <div className="panel-head">
          <h2 id="requests-heading">Requests</h2>
          {/* The export is of the filters as shown (applied to the list too), never of older ones. */}
          <a
            className="button secondary small"
            href={`/dashboard/api/usage/export.csv${query({ ...draft })}`}
            download
            onClick={(e) => {
              if (!apply()) e.preventDefault();
            }}
          >
            Export CSV
          </a>
        </div>
        <form
          className="filters"
          aria-label="Filter requests"
          noValidate
          onSubmit={(e) => {
            e.preventDefault();
            apply();
          }}
        >
          <div className="field">
            <label htmlFor="f-key">Key</label>
            <select id="f-key" value={draft.key_id} onChange={(e) => set('key_id', e.target.value)}>
              <option value="">All keys</option>
              {keys.data?.data.map((k) => (
                <option key={k.id} value={k.id}>
                  {keyLabel(k)}
                  {k.status === 'revoked' ? ' – revoked' : ''}
                </option>
              ))}
            </select>
          </div>
          <div className="field">
            <label htmlFor="f-provider">Provider</label>
            <select id="f-provider" value={draft.provider} onChange={(e) => set('provider', e.target.value)}>
              <option value="">All providers</option>
              {PROVIDERS.map((p) => (
                <option key={p} value={p}>
                  {p}
                </option>
              ))}
            </select>
          </div>
          <div className="field">
            <label htmlFor="f-status">Status</label>
            <select id="f-status" value={draft.status} onChange={(e) => set('status', e.target.value)}>
              <option value="">Any</option>
              <option value="ok">Succeeded</option>
              <option value="error">Failed</option>
            </select>
          </div>
          <div className="field">
            <label htmlFor="f-from">From (UTC)</label>
            <input
              id="f-from"
              type="date"
              aria-invalid={problem ? true : undefined}
              aria-describedby={problem ? 'range-problem' : undefined}
              value={draft.from}
              onChange={(e) => set('from', e.target.value)}
            />
          </div>
          <div className="field">
            <label htmlFor="f-to">To (UTC)</label>
            <input
              id="f-to"
              type="date"
              aria-invalid={problem ? true : undefined}
              aria-describedby={problem ? 'range-problem' : undefined}
              value={draft.to}
              onChange={(e) => set('to', e.target.value)}
            />
          </div>
          <div className="field actions-field">
            <button type="submit" className="button primary small">
              Apply
            </button>
            <button
              type="button"
              className="button secondary small"
              onClick={() => {
                setDraft(NO_FILTERS);
                setFilters(NO_FILTERS);
                setProblem(undefined);
                setCursors([]);
              }}
            >
              Clear
            </button>
          </div>
        </form>
        {problem ? (
          <p id="range-problem" className="notice error" role="alert">
            {problem}
          </p>
        ) : (
          <LoadError loaded={page} what="the requests" />
        )}
        {!problem && page.loading && !page.data && (
          <p className="hint" aria-busy="true">
            Loading…
          </p>
        )}
        {!problem && page.data && page.data.data.length === 0 && (
          <p className="hint">
            No requests{sameFilters(filters, NO_FILTERS) ? ' yet' : ' match these filters'}.
          </p>
        )}
        {!problem && page.data && page.data.data.length > 0 && (
          <div className="table-wrap">
            <table className="usage-table stack" aria-busy={page.loading}>
              <thead>
                <tr>
                  <th scope="col">Time (UTC)</th>
                  <th scope="col">Key</th>
                  <th scope="col">Provider</th>
                  <th scope="col">Model</th>
                  <th scope="col" className="num">
                    Tokens
                  </th>
                  <th scope="col" className="num">
                    Cost
                  </th>
                  <th scope="col" className="num">
                    Duration
                  </th>
                  <th scope="col">Status</th>
                </tr>
              </thead>
              <tbody>
                {page.data.data.map((u) => (
                  <tr key={u.request_id}>
                    <td className="nowrap" data-label="Time" title={u.request_id}>
                      {dateTime(u.created_at)}
                    </td>
                    <td className="name-cell" data-label="Key">
                      {u.key.name ?? u.key.id}
                      {u.key.name !== null && u.key.hint && <code className="key-hint">{u.key.hint}</code>}
                    </td>
                    <td data-label="Provider">{u.provider ?? '—'}</td>
                    <td className="wide-only" data-label="Model">
                      {u.model ?? '—'}
                    </td>
                    <td
                      className="num"
                      data-label="Tokens"
                      title={`${tokens(u.prompt_tokens)} prompt + ${tokens(u.completion_tokens)} completion${u.usage_estimated ? ' (counted locally)' : ''}`}
                    >
                      {tokens(u.total_tokens)}
                    </td>
                    <td className="num" data-label="Cost">
                      {usd(u.cost)}
                    </td>
                    <td className="num wide-only" data-label="Duration">
                      {durationMs(u.duration_ms)}
                    </td>
                    <td data-label="Status">
                      <span className={`status ${u.status === 'ok' ? 'active' : 'failed'}`}>
                        {u.status === 'ok' ? 'OK' : `Failed ${u.http_status}`}
                      </span>
                      {u.error_code && <div className="hint">{u.error_code}</div>}
                      {u.requests > 1 && (
                        <div className="hint refused-count">
                          {tokens(u.requests)} requests refused in this minute
                        </div>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        {page.data?.data.some((u) => u.requests > 1) && !problem && (
          <p className="hint">
            Requests refused for lack of balance (402) are counted per key and minute: such a row stands for
            every one of them, as the per-day numbers do.
          </p>
        )}
        <nav className="pager" aria-label="Pages of requests" hidden={problem !== undefined}>
          <button
            type="button"
            className="button secondary small"
            disabled={cursors.length === 0}
            onClick={() => setCursors((c) => c.slice(0, -1))}
          >
            ← Newer
          </button>
          <span className="hint">Page {cursors.length + 1}</span>
          <button
            type="button"
            className="button secondary small"
            disabled={!page.data?.next_cursor}
            onClick={() => {
              const next = page.data?.next_cursor;
              if (next) setCursors((c) => [...c, next]);
            }}
          >
            Older →
          </button>
        </nav>
      </section>
    </>
  );
}
