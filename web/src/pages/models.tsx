import { api, type ModelPrices } from '../api';
import { LoadError } from '../components/notice';
import { keyLabel, usd } from '../format';
import { Link } from '../router';
import { useLoad } from '../use-load';

/** Every provider and model with its prices, whether `auto` uses it, and which of the account's keys may. */
export function ModelsPage() {
  const models = useLoad(() => api<ModelPrices>('GET', '/models'), 'models');
  const data = models.data;
  // A key by its name, with its hint only where another key has the same name.
  const keyName = (id: string) => {
    const k = data?.keys.find((x) => x.id === id);
    if (!k) return id;
    return data?.keys.some((x) => x.id !== id && x.name === k.name) ? keyLabel(k) : k.name;
  };
  return (
    <>
      <p className="lead">
        Prices in US dollars per 1 million tokens. Call a model by its name or its provider's, or with{' '}
        <code>"model": "auto"</code>, which rotates over the active providers marked <em>auto</em>. Cached
        prompt tokens are billed at the cache prices.
      </p>
      <LoadError loaded={models} what="the models" />
      {models.loading && !data && (
        <p className="hint" aria-busy="true">
          Loading…
        </p>
      )}
      {data && (
        <section className="panel" aria-label="Models and prices">
          <div className="table-wrap">
            <table className="stack models-table">
              <thead>
                <tr>
                  <th scope="col">Provider</th>
                  <th scope="col">Model</th>
                  <th scope="col" className="num">
                    Input
                  </th>
                  <th scope="col" className="num">
                    Output
                  </th>
                  <th scope="col" className="num">
                    Cache read
                  </th>
                  <th scope="col" className="num">
                    Cache write
                  </th>
                  <th scope="col">In auto</th>
                  <th scope="col">Your keys</th>
                </tr>
              </thead>
              <tbody>
                {data.data.map((m) => (
                  <tr key={m.provider} data-provider={m.provider}>
                    <td data-label="Provider">
                      <strong>{m.provider}</strong>
                      {!m.active && <div className="hint">not serving now</div>}
                    </td>
                    <td data-label="Model">
                      <code>{m.model}</code>
                    </td>
                    <td className="num" data-label="Input">
                      {usd(m.input_price)}
                    </td>
                    <td className="num" data-label="Output">
                      {usd(m.output_price)}
                    </td>
                    <td className="num" data-label="Cache read">
                      {usd(m.cache_read_price)}
                    </td>
                    <td className="num" data-label="Cache write">
                      {usd(m.cache_write_price)}
                    </td>
                    <td data-label="In auto">{m.auto ? <span className="yes">Yes</span> : 'No'}</td>
                    <td className="name-cell" data-label="Your keys" data-testid="model-keys">
                      {data.keys.length === 0
                        ? 'No keys yet'
                        : m.key_ids.length === data.keys.length
                          ? 'All your keys'
                          : m.key_ids.length === 0
                            ? 'None of your keys'
                            : m.key_ids.map(keyName).join(', ')}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <p className="hint">
            A key limited to some providers or models (<Link to="/keys">API keys</Link>, Edit) may use only
            those, also under <code>auto</code>.
          </p>
        </section>
      )}
    </>
  );
}
