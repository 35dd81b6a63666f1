import { type FormEvent, useEffect, useRef, useState } from 'react';
import { announce, focusOn } from '../announce';
import { api, type CodeBatch, type CodeState } from '../api';
import { CopyButton } from '../components/copy-button';
import { ErrorNotice, LoadError } from '../components/notice';
import { dateTime, usd, usdFromInput } from '../format';
import { messageOf, useLoad } from '../use-load';

const MAX_CODES = 1000;

interface Created {
  batch: CodeBatch;
  codes: string[];
}

/** The new codes as the server's CSV export has them: `code,amount_usd,batch_id,expires_at`. */
function csvOf(created: Created): string {
  const { batch } = created;
  const lines = ['code,amount_usd,batch_id,expires_at'];
  for (const code of created.codes)
    lines.push([code, batch.amount, batch.id, batch.expires_at ?? ''].join(','));
  return `${lines.join('\r\n')}\r\n`;
}

function download(created: Created): void {
  const url = URL.createObjectURL(new Blob([csvOf(created)], { type: 'text/csv;charset=utf-8' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = `tollgate-codes-${created.batch.id}.csv`;
  document.body.append(a);
  a.click();
  a.remove();
  URL.revokeObjectURL(url);
}

/** The codes of a batch just created: shown this once, to copy or download. */
function NewCodes({ created, onDone }: { created: Created; onDone: () => void }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => focusOn(heading.current), []);
  const { batch, codes } = created;
  return (
    <section className="panel new-key" aria-labelledby="new-codes-heading">
      <h2 id="new-codes-heading" ref={heading} tabIndex={-1}>
        {codes.length} {codes.length === 1 ? 'code' : 'codes'} of {usd(batch.amount)}
      </h2>
      <p className="warning" role="alert">
        <strong>Save these codes now. You will not see them again:</strong> Tollgate stores only a fingerprint
        of each.
      </p>
      <label htmlFor="new-codes" className="visually-hidden">
        The new codes
      </label>
      <textarea
        id="new-codes"
        className="codes-list"
        data-testid="new-codes"
        readOnly
        rows={Math.min(codes.length, 10)}
        value={codes.join('\n')}
      />
      <div className="row">
        <CopyButton text={codes.join('\n')} label="Copy codes" />
        <button type="button" className="button secondary small" onClick={() => download(created)}>
          Download CSV
        </button>
      </div>
      <div className="actions">
        <button type="button" className="button primary" onClick={onDone}>
          I have saved the codes
        </button>
      </div>
    </section>
  );
}

function CreateBatchForm({ onCreated }: { onCreated: (c: Created) => void }) {
  const [amount, setAmount] = useState('');
  const [count, setCount] = useState('10');
  const [expires, setExpires] = useState('');
  const [note, setNote] = useState('');
  const [problem, setProblem] = useState<{ field: string; message: string }>();
  const [busy, setBusy] = useState(false);

  function check(): { field: string; message: string } | undefined {
    if (usdFromInput(amount) === undefined || Number(amount) <= 0) {
      return { field: 'amount', message: 'Enter the amount of each code in dollars, e.g. 5 or 12.50.' };
    }
    const n = Number(count);
    if (!/^\d+$/.test(count.trim()) || n < 1 || n > MAX_CODES) {
      return { field: 'count', message: `Make 1 to ${MAX_CODES} codes at a time.` };
    }
    if (expires !== '' && Date.parse(`${expires}:00Z`) <= Date.now()) {
      return { field: 'expires', message: 'The expiry must be in the future (UTC), or left empty.' };
    }
    return undefined;
  }

  async function submit(e: FormEvent) {
    e.preventDefault();
    const p = check();
    setProblem(p);
    if (p) return;
    setBusy(true);
    try {
      const created = await api<Created>('POST', '/admin/code-batches', {
        amount: amount.trim(),
        count: Number(count),
        ...(expires ? { expires_at: `${expires}:00Z` } : {}),
        ...(note.trim() ? { note: note.trim() } : {}),
      });
      setAmount('');
      setNote('');
      setExpires('');
      onCreated(created);
    } catch (err) {
      setProblem({ field: '', message: messageOf(err) });
    } finally {
      setBusy(false);
    }
  }

  const invalid = (f: string) => (problem?.field === f ? true : undefined);
  return (
    <form className="inline-form" onSubmit={submit} aria-labelledby="create-batch-heading" noValidate>
      <h2 id="create-batch-heading">Create a batch</h2>
      <div className="row wrap controls-fields">
        <div className="field">
          <label htmlFor="batch-amount">Amount of each code (USD)</label>
          <input
            id="batch-amount"
            inputMode="decimal"
            aria-invalid={invalid('amount')}
            value={amount}
            onChange={(e) => setAmount(e.target.value)}
          />
        </div>
        <div className="field">
          <label htmlFor="batch-count">How many codes</label>
          <input
            id="batch-count"
            inputMode="numeric"
            aria-invalid={invalid('count')}
            value={count}
            onChange={(e) => setCount(e.target.value)}
          />
        </div>
        <div className="field">
          <label htmlFor="batch-expires">Expires (UTC, optional)</label>
          <input
            id="batch-expires"
            type="datetime-local"
            aria-invalid={invalid('expires')}
            value={expires}
            onChange={(e) => setExpires(e.target.value)}
          />
        </div>
        <div className="field grow">
          <label htmlFor="batch-note">Note (optional)</label>
          <input
            id="batch-note"
            maxLength={200}
            placeholder="e.g. conference giveaway"
            value={note}
            onChange={(e) => setNote(e.target.value)}
          />
        </div>
      </div>
      <ErrorNotice>{problem?.message}</ErrorNotice>
      <div className="actions">
        <button type="submit" className="button primary" disabled={busy}>
          {busy ? 'Creating…' : 'Create codes'}
        </button>
      </div>
    </form>
  );
}

/** One batch's codes: each one's last characters and who redeemed it when (never the code). */
function BatchCodes({ id }: { id: string }) {
  const codes = useLoad(() => api<{ codes: CodeState[] }>('GET', `/admin/code-batches/${id}`), `batch-${id}`);
  if (codes.error) return <LoadError loaded={codes} what="the codes" />;
  if (!codes.data) return <p className="hint">Loading…</p>;
  return (
    <ul className="controls-summary">
      {codes.data.codes.map((c) => (
        <li key={c.position}>
          <code>…{c.hint}</code>:{' '}
          {c.redeemed_by ? `redeemed by ${c.redeemed_by.email}, ${dateTime(c.redeemed_at)}` : 'not redeemed'}
        </li>
      ))}
    </ul>
  );
}

export function AdminCodesPage() {
  const batches = useLoad(() => api<{ data: CodeBatch[] }>('GET', '/admin/code-batches'), 'code-batches');
  const [created, setCreated] = useState<Created>();
  const [open, setOpen] = useState<string>();
  const list = useRef<HTMLHeadingElement>(null);
  return (
    <>
      <p className="lead">
        Top-up codes add their amount to the balance of the account that redeems them, once. Each batch is in
        the ledger of every account that redeemed one of its codes.
      </p>
      {created ? (
        <NewCodes
          created={created}
          onDone={() => {
            setCreated(undefined);
            window.requestAnimationFrame(() => focusOn(list.current));
          }}
        />
      ) : (
        <CreateBatchForm
          onCreated={(c) => {
            setCreated(c);
            announce(`${c.codes.length} codes created. Save them now: they are shown only this once.`);
            batches.reload();
          }}
        />
      )}
      <section className="panel" aria-labelledby="batches-heading">
        <h2 id="batches-heading" ref={list} tabIndex={-1}>
          Batches
        </h2>
        <LoadError loaded={batches} what="the batches" />
        {batches.data && batches.data.data.length === 0 && <p className="hint">No codes yet.</p>}
        {batches.data && batches.data.data.length > 0 && (
          <div className="table-wrap">
            <table className="stack" data-testid="batches">
              <thead>
                <tr>
                  <th scope="col">Created</th>
                  <th scope="col" className="num">
                    Amount
                  </th>
                  <th scope="col" className="num">
                    Redeemed
                  </th>
                  <th scope="col">Expires</th>
                  <th scope="col">Note</th>
                  <th scope="col">
                    <span className="visually-hidden">Codes</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {batches.data.data.map((b) => (
                  <tr key={b.id} data-batch={b.id}>
                    <td data-label="Created">
                      {dateTime(b.created_at)}
                      <div className="hint">
                        <code>{b.id}</code>
                      </div>
                    </td>
                    <td className="num" data-label="Amount">
                      {usd(b.amount)}
                    </td>
                    <td className="num" data-label="Redeemed" data-testid="redeemed">
                      {b.redeemed} of {b.created}
                      {b.expired > 0 && <div className="hint">{b.expired} expired</div>}
                    </td>
                    <td data-label="Expires">{b.expires_at ? dateTime(b.expires_at) : 'Never'}</td>
                    <td className="name-cell" data-label="Note">
                      {b.note ?? ''}
                      {open === b.id && <BatchCodes id={b.id} />}
                    </td>
                    <td className="actions-cell">
                      <button
                        type="button"
                        className="button secondary small"
                        aria-expanded={open === b.id}
                        aria-label={`${open === b.id ? 'Hide' : 'Show'} codes of batch ${b.id}`}
                        onClick={() => setOpen(open === b.id ? undefined : b.id)}
                      >
                        {open === b.id ? 'Hide codes' : 'Show codes'}
                      </button>
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
