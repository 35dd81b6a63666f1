import { type FormEvent, useState } from 'react';
import { api, type Invite, type SignupMode } from '../api';
import { CopyButton } from '../components/copy-button';
import { ErrorNotice } from '../components/notice';
import { date } from '../format';
import { messageOf, useLoad } from '../use-load';

const MODES: Record<SignupMode, string> = {
  open: 'Sign-up is open (SIGNUP=open): anyone who reaches this server can create an account. Invite codes are not needed.',
  invite: 'Sign-up is by invitation (SIGNUP=invite): a new account needs one of these codes.',
  closed:
    'Sign-up is closed (SIGNUP=closed): accounts are created with bin/tollgate accounts create. Invite codes are not accepted.',
};

type Created = Invite & { code: string };

export function AdminInvitesPage() {
  const invites = useLoad(
    () => api<{ signup: SignupMode; data: Invite[] }>('GET', '/admin/invites'),
    'invites',
  );
  const [email, setEmail] = useState('');
  const [note, setNote] = useState('');
  const [days, setDays] = useState(7);
  const [created, setCreated] = useState<Created>();
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  async function submit(e: FormEvent) {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const invite = await api<Created>('POST', '/admin/invites', {
        ...(email.trim() ? { email: email.trim() } : {}),
        ...(note.trim() ? { note: note.trim() } : {}),
        expires_in_days: days,
      });
      setCreated(invite);
      setEmail('');
      setNote('');
      invites.reload();
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  }

  async function revoke(id: string) {
    setError(undefined);
    try {
      await api('DELETE', `/admin/invites/${encodeURIComponent(id)}`);
      invites.reload();
    } catch (err) {
      setError(messageOf(err));
    }
  }

  const link = created ? `${window.location.origin}/signup?invite=${encodeURIComponent(created.code)}` : '';
  return (
    <>
      {invites.data && <p className="lead">{MODES[invites.data.signup]}</p>}
      <form className="form narrow panel" onSubmit={submit} aria-labelledby="invite-heading">
        <h2 id="invite-heading">Create an invite</h2>
        <label htmlFor="invite-email">For email (optional)</label>
        <input
          id="invite-email"
          type="email"
          aria-describedby="invite-email-hint"
          value={email}
          onChange={(e) => setEmail(e.target.value)}
        />
        <p id="invite-email-hint" className="hint">
          When set, only this email can use the code.
        </p>
        <label htmlFor="invite-note">Note (optional)</label>
        <input id="invite-note" maxLength={200} value={note} onChange={(e) => setNote(e.target.value)} />
        <label htmlFor="invite-days">Valid for</label>
        <select id="invite-days" value={days} onChange={(e) => setDays(Number(e.target.value))}>
          <option value={1}>1 day</option>
          <option value={7}>7 days</option>
          <option value={30}>30 days</option>
        </select>
        <ErrorNotice>{error}</ErrorNotice>
        <button type="submit" className="button primary" disabled={busy}>
          Create invite
        </button>
      </form>
      {created && (
        <section className="panel new-key" aria-labelledby="new-invite-heading">
          <h2 id="new-invite-heading">New invite</h2>
          <p className="warning" role="alert">
            <strong>Send this link or code now. It is shown only once</strong> and works for one sign-up.
          </p>
          <div className="secret">
            <code>{created.code}</code>
            <CopyButton text={created.code} label="Copy code" />
          </div>
          <div className="secret">
            <code>{link}</code>
            <CopyButton text={link} label="Copy sign-up link" />
          </div>
        </section>
      )}
      {invites.data && invites.data.data.length > 0 && (
        <section className="panel" aria-labelledby="invites-heading">
          <h2 id="invites-heading">Invites</h2>
          <div className="table-wrap">
            <table>
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
                    <td>{date(i.created_at)}</td>
                    <td>{i.email ?? 'anyone'}</td>
                    <td>{i.note ?? ''}</td>
                    <td>
                      <span className={`status ${i.status === 'open' ? 'active' : 'revoked'}`}>
                        {i.status}
                      </span>
                    </td>
                    <td>{date(i.expires_at)}</td>
                    <td>
                      {i.status === 'open' && (
                        <button
                          type="button"
                          className="button danger small"
                          onClick={() => void revoke(i.id)}
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
    </>
  );
}
