import { api, type ProviderInfo } from '../api';
import { LoadError } from '../components/notice';
import { percent, usd } from '../format';
import { useLoad } from '../use-load';

const REASONS: Record<string, string> = {
  not_configured: 'no API key configured',
  disabled: 'disabled by configuration',
  circuit_open: 'circuit open after failures',
};

const CIRCUITS: Record<string, string> = { closed: 'closed', open: 'open', half_open: 'half-open (probing)' };

export function AdminProvidersPage() {
  const providers = useLoad(
    () => api<{ window_minutes: number; data: ProviderInfo[] }>('GET', '/admin/providers'),
    'providers',
  );
  const data = providers.data;
  return (
    <>
      <p className="lead">
        Each provider's state on this server right now, its prices (USD per 1M tokens) and its recent error
        rate{data ? ` over the last ${data.window_minutes} minutes, all accounts` : ''}.{' '}
        <button type="button" className="button secondary small" onClick={providers.reload}>
          Refresh
        </button>
      </p>
      <LoadError loaded={providers} what="the providers" />
      {data && (
        <section className="panel" aria-label="Providers">
          <div className="table-wrap">
            <table className="stack">
              <thead>
                <tr>
                  <th scope="col">Provider</th>
                  <th scope="col">Model</th>
                  <th scope="col">State</th>
                  <th scope="col" className="num">
                    Price in / out
                  </th>
                  <th scope="col" className="num">
                    Last hour
                  </th>
                </tr>
              </thead>
              <tbody>
                {data.data.map((p) => (
                  <tr key={p.name}>
                    <td data-label="Provider">
                      <strong className="nowrap">{p.name}</strong>
                      <div className="hint">
                        {p.wire_format}
                        {p.in_auto_rotation ? ' · auto rotation' : ''}
                      </div>
                    </td>
                    <td data-label="Model">
                      <code>{p.model}</code>
                    </td>
                    <td data-label="State">
                      <span className={`status ${p.active ? 'active' : 'revoked'}`}>
                        {p.active ? 'Active' : 'Inactive'}
                      </span>
                      {p.inactive_reason && <div className="hint">{REASONS[p.inactive_reason]}</div>}
                      <div className="hint">Circuit: {CIRCUITS[p.circuit] ?? p.circuit}</div>
                    </td>
                    <td className="num" data-label="Price in / out">
                      {usd(p.input_price)} / {usd(p.output_price)}
                    </td>
                    <td className="num" data-label="Last hour">
                      {p.requests_last_hour} {p.requests_last_hour === 1 ? 'request' : 'requests'}
                      <div className={`hint${p.error_rate !== null && p.error_rate >= 0.2 ? ' bad' : ''}`}>
                        {p.error_rate === null ? 'no traffic' : `${percent(p.error_rate)} errors`}
                      </div>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </section>
      )}
    </>
  );
}
