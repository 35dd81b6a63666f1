import { type FormEvent, useEffect, useRef, useState } from 'react';
import { announce, focusOn } from '../announce';
import { api, type Invite, type SignupMode } from '../api';
import { CopyButton } from '../components/copy-button';
import { Dialog } from '../components/dialog';
import { ErrorNotice, LoadError, SuccessNotice } from '../components/notice';
import { date, dateTime } from '../format';
import { messageOf, useLoad } from '../use-load';

const MODES: Record<SignupMode, string> = {
  open: 'Sign-up is open (SIGNUP=open): anyone who reaches this server can create an account. Invite codes are not needed.',
  invite: 'Sign-up is by invitation (SIGNUP=invite): a new account needs one of these codes.',
  closed:
    'Sign-up is closed (SIGNUP=closed): accounts are created with bin/tollgate accounts create. Invite codes are not accepted.',
};

/** The days an invite may be valid, as the API takes them. */
const MIN_DAYS = 1;
const MAX_DAYS = 90;

type Created = Invite & { code: string };

/** The sign-up link of an invite: with its email, when made for one, so the form is filled in. */
export function signupLink(code: string, email: string | null): string {
  const q = new URLSearchParams({ invite: code });
  if (email) q.set('email', email);
  return `${window.location.origin}/signup?${q.toString()}`;
}

function statusText(i: Invite): string {
  if (i.status === 'used') return 'used';
  if (i.status === 'revoked') return 'withdrawn';
  return i.status;
}

export function AdminInvitesPage() {
  const invites = useLoad(
    () => api<{ signup: SignupMode; data: Invite[] }>('GET', '/admin/invites'),
    'invites',
  );
  const [email, setEmail] = useState('');
  const [note, setNote] = useState('');
  const [days, setDays] = useState('7');
  const [created, setCreated] = useState<Created>();
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const [withdrawing, setWithdrawing] = useState<Invite>();
  const [withdrawError, setWithdrawError] = useState<string>();
  const [message, setMessage] = useState<string>();
  const newInvite = useRef<HTMLHeadingElement>(null);
  const listHeading = useRef<HTMLHeadingElement>(null);

  useEffect(() => {
    if (created) focusOn(newInvite.current);
  }, [created]);

  async function submit(e: FormEvent) {
    e.preventDefault();
    const n = Number(days);
    if (!/^\d+$/.test(days.trim()) || n < MIN_DAYS || n > MAX_DAYS) {
      setError(
        `Choose how many days the invite stays valid: a whole number from ${MIN_DAYS} to ${MAX_DAYS}.`,
      );
      document.getElementById('invite-days')?.focus();
      return;
    }
    const mail = email.trim();
    if (mail !== '' && !/^[^\s@]+@[^\s@]+$/.test(mail)) {
      setError('Enter the email as name@example.com, or leave it empty for an invite anyone can use.');
      document.getElementById('invite-email')?.focus();
      return;
    }
    setBusy(true);
    setError(undefined);
    setMessage(undefined);
    try {
      const invite = await api<Created>('POST', '/admin/invites', {
        ...(mail ? { email: mail } : {}),
        ...(note.trim() ? { note: note.trim() } : {}),
        expires_in_days: n,
      });
      setCreated(invite);
      announce('Invite created. Send its link or code now: it is shown only once.');
      setEmail('');
      setNote('');
      invites.reload();
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  }

  async function withdraw() {
    if (!withdrawing) return;
    setWithdrawError(undefined);
    try {
      await api('DELETE', `/admin/invites/${encodeURIComponent(withdrawing.id)}`);
      const text = `The invite${withdrawing.email ? ` for ${withdrawing.email}` : ''} was withdrawn: its code no longer works.`;
      setWithdrawing(undefined);
      setMessage(text);
      focusOn(listHeading.current);
      invites.reload();
    } catch (err) {
      setWithdrawError(messageOf(err));
    }
  }

  const link = created ? signupLink(created.code, created.email) : '';
  return (
    <>
      {invites.data && <p className="lead">{MODES[invites.data.signup]}</p>}
      <LoadError loaded={invites} what="the invites" />
      <form className="form narrow panel" onSubmit={submit} aria-labelledby="invite-heading" noValidate>
        <h2 id="invite-heading">Create an invite</h2>
        <label htmlFor="invite-email">For email (optional)</label>
        <input
          id="invite-email"
          type="email"
          aria-describedby="invite-email-hint"
          value={email}
          onChange={(e) => {
            setEmail(e.target.value);
            setError(undefined);
          }}
        />
        <p id="invite-email-hint" className="hint">
          When set, only this email can use the code, and the link fills it in.
        </p>
        <label htmlFor="invite-note">Note (optional)</label>
        <input id="invite-note" maxLength={200} value={note} onChange={(e) => setNote(e.target.value)} />
        <label htmlFor="invite-days">Valid for (days)</label>
        <input
          id="invite-days"
          type="number"
          inputMode="numeric"
          min={MIN_DAYS}
          max={MAX_DAYS}
          step={1}
          aria-describedby="invite-days-hint"
          value={days}
          onChange={(e) => {
            setDays(e.target.value);
            setError(undefined);
          }}
        />
        <p id="invite-days-hint" className="hint">
          From {MIN_DAYS} to {MAX_DAYS} days.
        </p>
        <ErrorNotice>{error}</ErrorNotice>
        <button type="submit" className="button primary" disabled={busy}>
          Create invite
        </button>
      </form>
      {created && (
        <section className="panel new-key" aria-labelledby="new-invite-heading">
          <h2 id="new-invite-heading" ref={newInvite} tabIndex={-1}>
            New invite{created.email ? ` for ${created.email}` : ''}
          </h2>
          <p className="warning" role="alert">
            <strong>Send this link or code now. It is shown only once</strong> and works for one sign-up until{' '}
            {dateTime(created.expires_at)}.
          </p>
          <div className="secret">
            <code>{created.code}</code>
            <CopyButton text={created.code} label="Copy code" />
          </div>
          <div className="secret">
            <code data-testid="invite-link">{link}</code>
            <CopyButton text={link} label="Copy sign-up link" />
          </div>
        </section>
      )}
      <SuccessNotice>{message}</SuccessNotice>
      {invites.data && invites.data.data.length > 0 && (
        <section className="panel" aria-labelledby="invites-heading">
          <h2 id="invites-heading" ref={listHeading} tabIndex={-1}>
            Invites
          </h2>
          <div className="table-wrap">
            <table className="stack">
              <thead>
                <tr>
                  <th scope="col">Created</th>
                  <th scope="col">For</th>
                  <th scope="col">Note</th>
                  <th scope="col">Status</th>
                  <th scope="col">Expires</th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {invites.data.data.map((i) => (
                  <tr key={i.id} className={i.status === 'open' ? undefined : 'muted'}>
                    <td data-label="Created">{date(i.created_at)}</td>
                    <td className="name-cell" data-label="For">
                      {i.email ?? 'anyone'}
                    </td>
                    <td className="name-cell" data-label="Note">
                      {i.note ?? ''}
                    </td>
                    <td data-label="Status">
                      <span className={`status ${i.status === 'open' ? 'active' : 'revoked'}`}>
                        {statusText(i)}
                      </span>
                      {i.status === 'used' && (
                        <div className="hint">
                          by {i.used_by_email ?? i.used_by ?? 'a deleted account'}
                          {i.used_at ? `, ${dateTime(i.used_at)}` : ''}
                        </div>
                      )}
                    </td>
                    <td data-label="Expires">{date(i.expires_at)}</td>
                    <td className="actions-cell">
                      {i.status === 'open' && (
                        <button
                          type="button"
                          className="button danger small"
                          aria-label={`Withdraw the invite ${i.email ? `for ${i.email}` : 'for anyone'} of ${date(i.created_at)}`}
                          onClick={() => {
                            setWithdrawError(undefined);
                            setWithdrawing(i);
                          }}
                        >
                          Withdraw
                        </button>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </section>
      )}
      <Dialog
        open={withdrawing !== undefined}
        title="Withdraw this invite?"
        onClose={() => setWithdrawing(undefined)}
      >
        {withdrawing && (
          <>
            <p>
              The code{withdrawing.email ? ` for ${withdrawing.email}` : ''} will stop working at once;
              whoever has it cannot sign up with it. This cannot be undone.
            </p>
            <ErrorNotice>{withdrawError}</ErrorNotice>
            <div className="actions">
              <button type="button" className="button secondary" onClick={() => setWithdrawing(undefined)}>
                Cancel
              </button>
              <button type="button" className="button danger" onClick={() => void withdraw()}>
                Withdraw invite
              </button>
            </div>
          </>
        )}
      </Dialog>
    </>
  );
}
