import { type FormEvent, useState } from 'react';
import { type Account, api, query } from '../api';
import { Dialog } from '../components/dialog';
import { ErrorNotice, LoadError, SuccessNotice } from '../components/notice';
import { date, usd, usdExact, usdFromInput } from '../format';
import { useSession } from '../session';
import { messageOf, useLoad } from '../use-load';

const MAX_GRANT = 1_000_000;

/** What is wrong with a grant as typed, in the form's words (the server checks the same again). */
function grantProblem(
  amount: string,
  note: string,
): { field: 'amount' | 'note'; message: string } | undefined {
  const a = amount.trim();
  if (a === '') return { field: 'amount', message: 'Enter an amount in dollars, e.g. 25 or 12.50.' };
  if (!/^\d+(\.\d{1,9})?$/.test(a)) {
    return {
      field: 'amount',
      message:
        'Enter the amount as a number of dollars with up to 9 decimals, e.g. 12.50 (no $ sign or commas).',
    };
  }
  if (Number(a) <= 0) return { field: 'amount', message: 'The amount must be more than $0.' };
  if (Number(a) > MAX_GRANT) return { field: 'amount', message: 'One grant can add at most $1,000,000.' };
  if (note.trim() === '') {
    return {
      field: 'note',
      message: 'Write a note for the ledger, e.g. the invoice or why the credit is given.',
    };
  }
  return undefined;
}

function GrantCredit({
  account,
  onDone,
  onCancel,
}: {
  account: Account;
  onDone: (message: string) => void;
  onCancel: () => void;
}) {
  const [amount, setAmount] = useState('');
  const [note, setNote] = useState('');
  const [error, setError] = useState<{ field: 'amount' | 'note' | undefined; message: string }>();
  const [busy, setBusy] = useState(false);
  async function submit(e: FormEvent) {
    e.preventDefault();
    const problem = grantProblem(amount, note);
    if (problem) {
      setError(problem);
      document.getElementById(problem.field === 'amount' ? 'grant-amount' : 'grant-note')?.focus();
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      const res = await api<{ account: Account }>(
        'POST',
        `/admin/accounts/${encodeURIComponent(account.id)}/credits`,
        {
          amount: amount.trim(),
          note: note.trim(),
        },
      );
      const added = usdFromInput(amount) ?? amount.trim();
      onDone(`Added ${added} to ${account.email}; the balance is now ${usdExact(res.account.balance)}.`);
    } catch (err) {
      setError({ field: undefined, message: messageOf(err) });
      setBusy(false);
    }
  }
  const invalid = (field: 'amount' | 'note') => (error?.field === field ? true : undefined);
  return (
    <form className="form" onSubmit={submit} noValidate>
      <p>
        Current balance of <strong>{account.email}</strong>: {usdExact(account.balance)}
      </p>
      <label htmlFor="grant-amount">Amount (USD)</label>
      <input
        id="grant-amount"
        inputMode="decimal"
        required
        autoComplete="off"
        placeholder="25.00"
        aria-invalid={invalid('amount')}
        aria-describedby="grant-error"
        value={amount}
        onChange={(e) => {
          setAmount(e.target.value);
          setError(undefined);
        }}
      />
      <label htmlFor="grant-note">Note</label>
      <input
        id="grant-note"
        required
        maxLength={200}
        placeholder="e.g. invoice 2024-117, trial credit"
        aria-invalid={invalid('note')}
        aria-describedby="grant-error"
        value={note}
        onChange={(e) => {
          setNote(e.target.value);
          setError(undefined);
        }}
      />
      <p className="hint">
        Up to $1,000,000 with up to 9 decimals. The credit and its note are recorded in the ledger; the user
        sees both.
      </p>
      <div id="grant-error">
        <ErrorNotice>{error?.message}</ErrorNotice>
      </div>
      <div className="actions">
        <button type="button" className="button secondary" onClick={onCancel}>
          Cancel
        </button>
        <button type="submit" className="button primary" disabled={busy}>
          {busy ? 'Adding…' : 'Add credit'}
        </button>
      </div>
    </form>
  );
}

export function AdminAccountsPage() {
  const me = useSession().account;
  const [search, setSearch] = useState('');
  const [applied, setApplied] = useState('');
  const [after, setAfter] = useState<string[]>([]);
  const cursor = after[after.length - 1];
  const list = useLoad(
    () =>
      api<{ data: Account[]; next_cursor: string | null }>(
        'GET',
        `/admin/accounts${query({ search: applied, after: cursor, limit: 50 })}`,
      ),
    `${applied}|${cursor ?? ''}`,
  );
  const [granting, setGranting] = useState<Account>();
  const [toggling, setToggling] = useState<Account>();
  const [message, setMessage] = useState<string>();
  const [error, setError] = useState<string>();

  async function toggle() {
    if (!toggling) return;
    const action = toggling.status === 'active' ? 'disable' : 'enable';
    try {
      await api('POST', `/admin/accounts/${encodeURIComponent(toggling.id)}/${action}`, {});
      setMessage(
        `${toggling.email} is ${action === 'disable' ? 'disabled: its keys and sessions stopped working' : 'enabled again'}.`,
      );
      setToggling(undefined);
      list.reload();
    } catch (err) {
      setError(messageOf(err));
    }
  }

  return (
    <>
      <form
        className="row search"
        aria-label="Search accounts"
        onSubmit={(e) => {
          e.preventDefault();
          setApplied(search.trim());
          setAfter([]);
        }}
      >
        <div className="field grow">
          <label htmlFor="account-search">Search by email</label>
          <input
            id="account-search"
            type="search"
            value={search}
            onChange={(e) => setSearch(e.target.value)}
          />
        </div>
        <button type="submit" className="button secondary">
          Search
        </button>
      </form>
      <SuccessNotice>{message}</SuccessNotice>
      <LoadError loaded={list} what="the accounts" />
      {list.data && list.data.data.length === 0 && (
        <p className="hint">
          <output>{applied ? `No account’s email contains “${applied}”.` : 'No accounts yet.'}</output>
        </p>
      )}
      {list.data && list.data.data.length > 0 && (
        <section className="panel" aria-label="Accounts">
          <div className="table-wrap">
            <table className="stack">
              <thead>
                <tr>
                  <th scope="col">Email</th>
                  <th scope="col">Role</th>
                  <th scope="col">Status</th>
                  <th scope="col" className="num">
                    Balance
                  </th>
                  <th scope="col">Created</th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {list.data.data.map((a) => (
                  <tr key={a.id} className={a.status === 'disabled' ? 'muted' : undefined}>
                    <td className="name-cell" data-label="Email">
                      {a.email}
                    </td>
                    <td data-label="Role">{a.role}</td>
                    <td data-label="Status">
                      <span className={`status ${a.status === 'active' ? 'active' : 'revoked'}`}>
                        {a.status}
                      </span>
                    </td>
                    <td className="num" data-label="Balance" title={usdExact(a.balance)}>
                      {usd(a.balance)}
                    </td>
                    <td data-label="Created">{date(a.created_at)}</td>
                    <td className="actions-cell">
                      <div className="row-actions">
                        <button
                          type="button"
                          className="button secondary small"
                          aria-label={`Grant credit to ${a.email}`}
                          onClick={() => {
                            setMessage(undefined);
                            setGranting(a);
                          }}
                        >
                          Grant credit
                        </button>
                        {a.id !== me.id && (
                          <button
                            type="button"
                            className={`button small ${a.status === 'active' ? 'danger' : 'secondary'}`}
                            aria-label={`${a.status === 'active' ? 'Disable' : 'Enable'} ${a.email}`}
                            onClick={() => {
                              setError(undefined);
                              setMessage(undefined);
                              setToggling(a);
                            }}
                          >
                            {a.status === 'active' ? 'Disable' : 'Enable'}
                          </button>
                        )}
                      </div>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <nav className="pager" aria-label="Pages of accounts">
            <button
              type="button"
              className="button secondary small"
              disabled={after.length === 0}
              onClick={() => setAfter((a) => a.slice(0, -1))}
            >
              ← Previous
            </button>
            <button
              type="button"
              className="button secondary small"
              disabled={!list.data.next_cursor}
              onClick={() => {
                const next = list.data?.next_cursor;
                if (next) setAfter((a) => [...a, next]);
              }}
            >
              Next →
            </button>
          </nav>
        </section>
      )}
      <Dialog open={granting !== undefined} title="Grant credit" onClose={() => setGranting(undefined)}>
        {granting && (
          <GrantCredit
            account={granting}
            onCancel={() => setGranting(undefined)}
            onDone={(m) => {
              setGranting(undefined);
              setMessage(m);
              list.reload();
            }}
          />
        )}
      </Dialog>
      <Dialog
        open={toggling !== undefined}
        title={toggling?.status === 'active' ? 'Disable this account?' : 'Enable this account?'}
        onClose={() => setToggling(undefined)}
      >
        {toggling && (
          <>
            <p>
              {toggling.status === 'active'
                ? `${toggling.email} will be logged out, and every API key of the account will be refused with 401 until it is enabled again. Its balance is kept.`
                : `${toggling.email} will be able to log in and use its keys again.`}
            </p>
            <ErrorNotice>{error}</ErrorNotice>
            <div className="actions">
              <button type="button" className="button secondary" onClick={() => setToggling(undefined)}>
                Cancel
              </button>
              <button
                type="button"
                className={`button ${toggling.status === 'active' ? 'danger' : 'primary'}`}
                onClick={() => void toggle()}
              >
                {toggling.status === 'active' ? 'Disable account' : 'Enable account'}
              </button>
            </div>
          </>
        )}
      </Dialog>
    </>
  );
}
