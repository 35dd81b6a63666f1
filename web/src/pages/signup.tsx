import { type FormEvent, useState } from 'react';
import { api, type SignupMode } from '../api';
import { ErrorNotice } from '../components/notice';
import { Link, useLocation } from '../router';
import { messageOf } from '../use-load';
import { AuthFrame } from './login';

const MIN_PASSWORD = 12;

export function SignupPage({ mode, onSignedUp }: { mode: SignupMode; onSignedUp: () => Promise<void> }) {
  const { search } = useLocation();
  // An invite made for one email comes with it in its link (`/signup?invite=…&email=…`).
  const [email, setEmail] = useState(search.get('email') ?? '');
  const [password, setPassword] = useState('');
  const [invite, setInvite] = useState(search.get('invite') ?? '');
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  if (mode === 'closed') {
    return (
      <AuthFrame title="Sign up">
        <p>Sign-up is closed on this server. Ask its operator for an account.</p>
        <p className="switch">
          <Link to="/login">Back to log in</Link>
        </p>
      </AuthFrame>
    );
  }

  async function submit(e: FormEvent) {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await api('POST', '/auth/signup', {
        email,
        password,
        ...(mode === 'invite' ? { invite_code: invite.trim() } : {}),
      });
      setPassword('');
      await onSignedUp();
    } catch (err) {
      setError(messageOf(err));
      setBusy(false);
    }
  }

  return (
    <AuthFrame title="Create your account">
      <form onSubmit={submit} className="form">
        <label htmlFor="signup-email">Email</label>
        <input
          id="signup-email"
          type="email"
          autoComplete="email"
          required
          value={email}
          onChange={(e) => setEmail(e.target.value)}
        />
        <label htmlFor="signup-password">Password</label>
        <input
          id="signup-password"
          type="password"
          autoComplete="new-password"
          required
          minLength={MIN_PASSWORD}
          aria-describedby="signup-password-hint"
          value={password}
          onChange={(e) => setPassword(e.target.value)}
        />
        <p id="signup-password-hint" className="hint">
          At least {MIN_PASSWORD} characters. A passphrase of a few words is easy to remember.
        </p>
        {mode === 'invite' && (
          <>
            <label htmlFor="signup-invite">Invite code</label>
            <input
              id="signup-invite"
              required
              autoComplete="off"
              spellCheck={false}
              aria-describedby="signup-invite-hint"
              value={invite}
              onChange={(e) => setInvite(e.target.value)}
            />
            <p id="signup-invite-hint" className="hint">
              Accounts on this server are by invitation: an administrator gives you the code.
            </p>
          </>
        )}
        <ErrorNotice>{error}</ErrorNotice>
        <button type="submit" className="button primary" disabled={busy}>
          {busy ? 'Creating…' : 'Create account'}
        </button>
      </form>
      <p className="switch">
        Already have an account? <Link to="/login">Log in</Link>
      </p>
    </AuthFrame>
  );
}
