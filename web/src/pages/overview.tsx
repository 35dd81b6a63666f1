import { type AccountSummary, api, type Credit } from '../api';
import { GettingStarted } from '../components/getting-started';
import { LoadError } from '../components/notice';
import { date, usd } from '../format';
import { Link } from '../router';
import { useSession } from '../session';
import { useLoad } from '../use-load';

export function BalanceCards({ summary }: { summary: AccountSummary }) {
  return (
    <section className="cards" aria-label="Balance">
      <div className="card balance">
        <h2>Balance</h2>
        <p className="big" data-testid="balance">
          {usd(summary.balance)}
        </p>
        {summary.held > 0 && <p className="hint">{usd(summary.held)} reserved for requests in progress</p>}
      </div>
      <div className="card">
        <h2>Spent today</h2>
        <p className="medium">{usd(summary.spend_today)}</p>
        <p className="hint">UTC day</p>
      </div>
      <div className="card">
        <h2>Spent this month</h2>
        <p className="medium">{usd(summary.spend_month)}</p>
      </div>
      <div className="card">
        <h2>Active keys</h2>
        <p className="medium">
          {summary.active_keys} <span className="of">of {summary.key_limit}</span>
        </p>
        <p className="hint">
          <Link to="/keys">Manage keys</Link>
        </p>
      </div>
    </section>
  );
}

export function OverviewPage() {
  const { apiBaseUrl } = useSession();
  const summary = useLoad(() => api<AccountSummary>('GET', '/account'), 'account');
  const credits = useLoad(() => api<{ data: Credit[] }>('GET', '/credits'), 'credits');
  const firstLoad = summary.loading && !summary.data;
  return (
    <>
      <LoadError loaded={summary} what="your balance" />
      {firstLoad && (
        <section className="cards" aria-label="Balance" aria-busy="true">
          <p className="hint">Loading your balance…</p>
        </section>
      )}
      {summary.data && <BalanceCards summary={summary.data} />}
      {summary.data && summary.data.balance === 0 && (
        <p className="notice info">
          Your balance is $0: requests will be refused with 402 until an administrator adds credit.
        </p>
      )}
      <section className="panel" aria-labelledby="start-heading">
        <h2 id="start-heading">Getting started</h2>
        {/* Until the account is known, nothing is said about its keys. */}
        {summary.data &&
          (summary.data.active_keys > 0 ? (
            <p>Call the API with one of your keys:</p>
          ) : (
            <p>
              First <Link to="/keys">create an API key</Link>, then call the API with it:
            </p>
          ))}
        <GettingStarted baseUrl={apiBaseUrl} apiKey={undefined} />
      </section>
      <section className="panel" aria-labelledby="credits-heading">
        <h2 id="credits-heading">Credits added</h2>
        <LoadError loaded={credits} what="the credits" />
        {credits.loading && !credits.data && (
          <p className="hint" aria-busy="true">
            Loading…
          </p>
        )}
        {credits.data && credits.data.data.length === 0 && (
          <p className="hint">No credit has been added yet.</p>
        )}
        {credits.data && credits.data.data.length > 0 && (
          <div className="table-wrap">
            <table className="stack">
              <thead>
                <tr>
                  <th scope="col">Date</th>
                  <th scope="col" className="num">
                    Amount
                  </th>
                  <th scope="col">Note</th>
                </tr>
              </thead>
              <tbody>
                {credits.data.data.map((c) => (
                  <tr key={c.id}>
                    <td data-label="Date">{date(c.created_at)}</td>
                    <td className="num" data-label="Amount">
                      {usd(c.amount)}
                    </td>
                    <td className="name-cell" data-label="Note">
                      {c.note ?? ''}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </>
  );
}
