import { useState } from 'react';
import { api, type DailyUsage, type KeyList, PROVIDERS, query, type UsageEntry } from '../api';
import { ErrorNotice } from '../components/notice';
import { type ChartMetric, UsageChart } from '../components/usage-chart';
import { dateTime, durationMs, tokens, usd } from '../format';
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

function ChartSection() {
  const [days, setDays] = useState(30);
  const [metric, setMetric] = useState<ChartMetric>('cost');
  const daily = useLoad(() => api<DailyUsage>('GET', `/usage/daily${query({ days })}`), `daily-${days}`);
  return (
    <section className="panel" aria-labelledby="chart-heading">
      <div className="panel-head">
        <h2 id="chart-heading">Per day</h2>
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
      <ErrorNotice>{daily.error}</ErrorNotice>
      {daily.data && <UsageChart usage={daily.data} metric={metric} />}
    </section>
  );
}

export function UsagePage() {
  const keys = useLoad(() => api<KeyList>('GET', '/keys'), 'keys');
  const [draft, setDraft] = useState<Filters>(NO_FILTERS);
  const [filters, setFilters] = useState<Filters>(NO_FILTERS);
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

  return (
    <>
      <ChartSection />
      <section className="panel" aria-labelledby="requests-heading">
        <div className="panel-head">
          <h2 id="requests-heading">Requests</h2>
          <a
            className="button secondary small"
            href={`/dashboard/api/usage/export.csv${query({ ...filters })}`}
            download
          >
            Export CSV
          </a>
        </div>
        <form
          className="filters"
          aria-label="Filter requests"
          onSubmit={(e) => {
            e.preventDefault();
            setFilters(draft);
            setCursors([]);
          }}
        >
          <div className="field">
            <label htmlFor="f-key">Key</label>
            <select id="f-key" value={draft.key_id} onChange={(e) => set('key_id', e.target.value)}>
              <option value="">All keys</option>
              {keys.data?.data.map((k) => (
                <option key={k.id} value={k.id}>
                  {k.name}
                  {k.status === 'revoked' ? ' (revoked)' : ''}
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
            <input id="f-from" type="date" value={draft.from} onChange={(e) => set('from', e.target.value)} />
          </div>
          <div className="field">
            <label htmlFor="f-to">To (UTC)</label>
            <input id="f-to" type="date" value={draft.to} onChange={(e) => set('to', e.target.value)} />
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
                setCursors([]);
              }}
            >
              Clear
            </button>
          </div>
        </form>
        <ErrorNotice>{page.error}</ErrorNotice>
        {page.data && page.data.data.length === 0 && (
          <p className="hint">No requests{filters === NO_FILTERS ? ' yet' : ' match these filters'}.</p>
        )}
        {page.data && page.data.data.length > 0 && (
          <div className="table-wrap">
            <table className="usage-table stack" aria-busy={page.loading}>
              <thead>
                <tr>
                  <th scope="col">Time</th>
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
                    <td data-label="Time" title={u.request_id}>
                      {dateTime(u.created_at)}
                    </td>
                    <td data-label="Key">{u.key.name ?? u.key.id}</td>
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
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <nav className="pager" aria-label="Pages of requests">
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
