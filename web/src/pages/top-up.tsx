import { type FormEvent, useState } from 'react';
import { ApiError, api, type Credit, type Redeemed } from '../api';
import { ErrorNotice, LoadError, SuccessNotice } from '../components/notice';
import { date, usd, usdExact } from '../format';
import { useLoad } from '../use-load';

/** What a refused redemption means for the user, by the API's error code. */
function redeemError(err: unknown): string {
  if (err instanceof ApiError && err.code === 'invalid_code') {
    return 'This code is unknown, already used or expired. Check it for typing mistakes; a code works only once.';
  }
  if (err instanceof ApiError && err.code === 'too_many_attempts') {
    return `Too many wrong codes: redeeming is paused for this account. ${err.message}`;
  }
  return err instanceof ApiError ? err.message : 'Something went wrong. Try again.';
}

/** Redeem a top-up code; the account's credits, each with the code batch it came from. */
export function TopUpPage() {
  const credits = useLoad(() => api<{ data: Credit[] }>('GET', '/credits'), 'credits');
  const [code, setCode] = useState('');
  const [error, setError] = useState<string>();
  const [done, setDone] = useState<string>();
  const [busy, setBusy] = useState(false);

  async function submit(e: FormEvent) {
    e.preventDefault();
    setDone(undefined);
    if (code.trim() === '') {
      setError('Enter the code you were given, e.g. tg-…');
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      const r = await api<Redeemed>('POST', '/credits/redeem', { code: code.trim() });
      setCode('');
      setDone(`Added ${usdExact(r.amount)}. Your balance is now ${usdExact(r.balance)}.`);
      credits.reload();
    } catch (err) {
      setError(redeemError(err));
    } finally {
      setBusy(false);
    }
  }

  return (
    <>
      <p className="lead">
        A top-up code adds its amount to your balance once. Codes come from the operator of this service.
      </p>
      <form className="inline-form" onSubmit={submit} aria-labelledby="redeem-heading" noValidate>
        <h2 id="redeem-heading">Redeem a code</h2>
        <div className="row">
          <div className="field grow">
            <label htmlFor="topup-code">Code</label>
            <input
              id="topup-code"
              autoComplete="off"
              spellCheck={false}
              maxLength={200}
              placeholder="tg-…"
              aria-invalid={error ? true : undefined}
              value={code}
              onChange={(e) => {
                setCode(e.target.value);
                setError(undefined);
              }}
            />
          </div>
          <button type="submit" className="button primary" disabled={busy}>
            {busy ? 'Redeeming…' : 'Redeem'}
          </button>
        </div>
        <ErrorNotice>{error}</ErrorNotice>
        <SuccessNotice>{done}</SuccessNotice>
      </form>
      <section className="panel" aria-labelledby="history-heading">
        <h2 id="history-heading">Credit history</h2>
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
            <table className="stack" data-testid="credit-history">
              <thead>
                <tr>
                  <th scope="col">Date</th>
                  <th scope="col" className="num">
                    Amount
                  </th>
                  <th scope="col">Note</th>
                  <th scope="col">Code batch</th>
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
                    <td data-label="Code batch">{c.batch_id ? <code>{c.batch_id}</code> : '—'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <p className="hint">The latest 20 credits: grants by an administrator and redeemed codes.</p>
      </section>
    </>
  );
}
