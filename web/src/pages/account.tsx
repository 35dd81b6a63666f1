import { type FormEvent, useState } from 'react';
import { api } from '../api';
import { ErrorNotice, SuccessNotice } from '../components/notice';
import { date } from '../format';
import { useSession } from '../session';
import { messageOf } from '../use-load';

function ChangePassword() {
  const { refresh } = useSession();
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [confirm, setConfirm] = useState('');
  const [error, setError] = useState<string>();
  const [done, setDone] = useState<string>();
  const [busy, setBusy] = useState(false);

  async function submit(e: FormEvent) {
    e.preventDefault();
    setError(undefined);
    setDone(undefined);
    if (next !== confirm) {
      setError('The new passwords do not match.');
      return;
    }
    setBusy(true);
    try {
      await api('POST', '/auth/password', { current_password: current, new_password: next });
      setCurrent('');
      setNext('');
      setConfirm('');
      await refresh();
      setDone('Password changed. Every other session of this account has been logged out.');
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  }

  return (
    <form className="form narrow" onSubmit={submit} aria-labelledby="password-heading">
      <h2 id="password-heading">Change password</h2>
      <label htmlFor="pw-current">Current password</label>
      <input
        id="pw-current"
        type="password"
        autoComplete="current-password"
        required
        value={current}
        onChange={(e) => setCurrent(e.target.value)}
      />
      <label htmlFor="pw-new">New password</label>
      <input
        id="pw-new"
        type="password"
        autoComplete="new-password"
        required
        minLength={12}
        aria-describedby="pw-new-hint"
        value={next}
        onChange={(e) => setNext(e.target.value)}
      />
      <p id="pw-new-hint" className="hint">
        At least 12 characters.
      </p>
      <label htmlFor="pw-confirm">Repeat the new password</label>
      <input
        id="pw-confirm"
        type="password"
        autoComplete="new-password"
        required
        value={confirm}
        onChange={(e) => setConfirm(e.target.value)}
      />
      <ErrorNotice>{error}</ErrorNotice>
      <SuccessNotice>{done}</SuccessNotice>
      <button type="submit" className="button primary" disabled={busy}>
        {busy ? 'Changing…' : 'Change password'}
      </button>
    </form>
  );
}

export function AccountPage() {
  const { account, logout } = useSession();
  return (
    <>
      <section className="panel" aria-labelledby="profile-heading">
        <h2 id="profile-heading">Profile</h2>
        <dl className="facts">
          <dt>Email</dt>
          <dd>{account.email}</dd>
          <dt>Role</dt>
          <dd>{account.role === 'admin' ? 'Administrator' : 'User'}</dd>
          <dt>Member since</dt>
          <dd>{date(account.created_at)}</dd>
        </dl>
      </section>
      <section className="panel">
        <ChangePassword />
      </section>
      <section className="panel" aria-labelledby="sessions-heading">
        <h2 id="sessions-heading">Sessions</h2>
        <p>Log out of the dashboard on every device and browser, this one included.</p>
        <button type="button" className="button secondary" onClick={() => void logout(true)}>
          Log out everywhere
        </button>
      </section>
    </>
  );
}
