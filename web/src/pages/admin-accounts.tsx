import { type FormEvent, useState } from 'react';
import { type Account, api, query } from '../api';
import { Dialog } from '../components/dialog';
import { ErrorNotice, SuccessNotice } from '../components/notice';
import { date, usd } from '../format';
import { useSession } from '../session';
import { messageOf, useLoad } from '../use-load';

function GrantCredit({ account, onDone }: { account: Account; onDone: (message: string) => void }) {
  const [amount, setAmount] = useState('');
  const [note, setNote] = useState('');
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  async function submit(e: FormEvent) {
    e.preventDefault();
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
      onDone(`Added $${amount.trim()} to ${account.email}; the balance is now ${usd(res.account.balance)}.`);
    } catch (err) {
      setError(messageOf(err));
      setBusy(false);
    }
  }
  return (
    <form className="form" onSubmit={submit}>
      <p>
        Current balance of <strong>{account.email}</strong>: {usd(account.balance)}
      </p>
      <label htmlFor="grant-amount">Amount (USD)</label>
      <input
        id="grant-amount"
        inputMode="decimal"
        required
        pattern="[0-9]+(\.[0-9]{1,9})?"
        placeholder="25.00"
        value={amount}
        onChange={(e) => setAmount(e.target.value)}
      />
      <label htmlFor="grant-note">Note</label>
      <input
        id="grant-note"
        required
        maxLength={200}
        placeholder="e.g. invoice 2024-117, trial credit"
        value={note}
        onChange={(e) => setNote(e.target.value)}
      />
      <p className="hint">The credit and its note are recorded in the ledger; the user sees both.</p>
      <ErrorNotice>{error}</ErrorNotice>
      <div className="actions">
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
      <ErrorNotice>{list.error}</ErrorNotice>
      {list.data && (
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
                    <td data-label="Email">{a.email}</td>
                    <td data-label="Role">{a.role}</td>
                    <td data-label="Status">
                      <span className={`status ${a.status === 'active' ? 'active' : 'revoked'}`}>
                        {a.status}
                      </span>
                    </td>
                    <td className="num" data-label="Balance">
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
          <>
            <GrantCredit
              account={granting}
              onDone={(m) => {
                setGranting(undefined);
                setMessage(m);
                list.reload();
              }}
            />
            <div className="actions">
              <button type="button" className="button secondary" onClick={() => setGranting(undefined)}>
                Cancel
              </button>
            </div>
          </>
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
