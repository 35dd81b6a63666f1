import { type Account, api, type Credit, query, type UsageEntry, type UsageReport } from '../api';
import { LoadError } from '../components/notice';
import {
  Breakdown,
  RefusedList,
  ReportCards,
  ReportChart,
  ReportControls,
  useReportParams,
  withParams,
} from '../components/report';
import { dateTime, keyLabel, tokens, usd } from '../format';
import { Link } from '../router';
import { useLoad } from '../use-load';

interface History {
  account: Account;
  credits: Credit[];
  usage: UsageEntry[];
}

/** One account's credits and latest calls (its charges), beside its totals. */
function AccountHistory({ id }: { id: string }) {
  const history = useLoad(() => api<History>('GET', `/admin/accounts/${encodeURIComponent(id)}/history`), id);
  const h = history.data;
  return (
    <section className="panel" aria-labelledby="history-heading" aria-busy={history.loading}>
      <h2 id="history-heading">{h ? `${h.account.email}: credits and charges` : 'Account history'}</h2>
      <LoadError loaded={history} what="the account's history" />
      {h && (
        <>
          <p>
            Balance <strong className="num">{usd(h.account.balance)}</strong> · {h.account.status}
          </p>
          <h3>Credits</h3>
          {h.credits.length === 0 ? (
            <p className="hint">No credits yet.</p>
          ) : (
            <ul>
              {h.credits.map((c) => (
                <li key={c.id}>
                  {dateTime(c.created_at)} · <span className="num">{usd(c.amount)}</span>
                  {c.note ? ` · ${c.note}` : ''}
                </li>
              ))}
            </ul>
          )}
          <h3>Latest calls</h3>
          {h.usage.length === 0 ? (
            <p className="hint">No calls yet.</p>
          ) : (
            // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must take focus (WCAG 2.1.1).
            <div className="table-wrap" tabIndex={0}>
              <table>
                <thead>
                  <tr>
                    <th scope="col">Time</th>
                    <th scope="col">Key</th>
                    <th scope="col">Provider</th>
                    <th scope="col">Status</th>
                    <th scope="col" className="num">
                      Tokens
                    </th>
                    <th scope="col" className="num">
                      Charge
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {h.usage.map((u) => (
                    <tr key={u.request_id}>
                      <td data-label="Time">{dateTime(u.created_at)}</td>
                      <td data-label="Key">{keyLabel(u.key)}</td>
                      <td data-label="Provider">{u.provider ?? '—'}</td>
                      <td data-label="Status">
                        {u.status === 'ok'
                          ? 'ok'
                          : `${u.error_code ?? 'error'}${u.requests > 1 ? ` ×${u.requests}` : ''}`}
                      </td>
                      <td className="num" data-label="Tokens">
                        {tokens(u.total_tokens)}
                      </td>
                      <td className="num" data-label="Charge">
                        {usd(u.cost)}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      )}
    </section>
  );
}

/**
 * Spend and calls across every account over a range, by account, provider and model; one account's
 * totals, credits and charges when the URL names it (`?account_id=`).
 */
export function AdminUsagePage() {
  const params = useReportParams(['account_id']);
  const q = query(params);
  const report = useLoad(() => api<UsageReport>('GET', `/admin/usage${q}`), q);
  const r = report.data;
  const accountId = params.account_id;
  return (
    <>
      {accountId && (
        <p>
          <Link to={withParams('/admin/usage', { ...params, account_id: undefined })}>← Every account</Link>
        </p>
      )}
      <ReportControls path="/admin/usage" report={r} />
      <LoadError loaded={report} what="the totals" />
      <div aria-busy={report.loading}>
        {r && (
          <>
            <p className="hint" data-testid="report-scope">
              {r.from} to {r.to}, per {r.interval}, times in {r.time_zone}
            </p>
            <ReportCards report={r} />
            <ReportChart report={r} />
            {!accountId && (
              <section className="panel" aria-label="By account">
                <h2>By account</h2>
                {(r.by_account ?? []).length === 0 ? (
                  <p className="hint">No calls in this range.</p>
                ) : (
                  <ul className="plain-list">
                    {(r.by_account ?? []).map((a) => (
                      <li key={a.account_id}>
                        <Link to={withParams('/admin/usage', { ...params, account_id: a.account_id })}>
                          {a.email ?? a.account_id}
                        </Link>{' '}
                        · {tokens(a.requests)} calls · <span className="num">{usd(a.cost)}</span>
                      </li>
                    ))}
                  </ul>
                )}
              </section>
            )}
            <Breakdown
              title="By provider"
              column="Provider"
              rows={r.by_provider.map((p) => ({ ...p, key: p.provider, label: p.provider }))}
            />
            <Breakdown
              title="By model"
              column="Model"
              rows={r.by_model.map((m) => ({ ...m, key: m.model, label: m.model }))}
            />
            <RefusedList report={r} />
          </>
        )}
      </div>
      {accountId && <AccountHistory id={accountId} />}
    </>
  );
}
