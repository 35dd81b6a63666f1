import { type FormEvent, type ReactNode, useState } from 'react';
import { api, type SignupMode } from '../api';
import { ErrorNotice, SuccessNotice } from '../components/notice';
import { Link } from '../router';
import { messageOf } from '../use-load';

export function AuthFrame({ title, children }: { title: string; children: ReactNode }) {
  return (
    <main className="auth">
      <div className="auth-card">
        <p className="brand-line">
          <svg viewBox="0 0 32 32" width="28" height="28" aria-hidden="true">
            <rect width="32" height="32" rx="7" fill="#1d4ed8" />
            <path d="M7 11h18v3H17.5v11h-3V14H7z" fill="#fff" />
          </svg>
          Tollgate
        </p>
        <h1>{title}</h1>
        {children}
      </div>
    </main>
  );
}

export function LoginPage({
  signup,
  notice,
  onLoggedIn,
}: {
  signup: SignupMode;
  notice?: string | undefined;
  onLoggedIn: () => Promise<void>;
}) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  async function submit(e: FormEvent) {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await api('POST', '/auth/login', { email, password });
      setPassword('');
      await onLoggedIn();
    } catch (err) {
      setError(messageOf(err));
      setBusy(false);
    }
  }

  return (
    <AuthFrame title="Log in">
      {notice && !error && <SuccessNotice>{notice}</SuccessNotice>}
      <form onSubmit={submit} className="form">
        <label htmlFor="login-email">Email</label>
        <input
          id="login-email"
          type="email"
          autoComplete="username"
          required
          value={email}
          onChange={(e) => setEmail(e.target.value)}
        />
        <label htmlFor="login-password">Password</label>
        <input
          id="login-password"
          type="password"
          autoComplete="current-password"
          required
          value={password}
          onChange={(e) => setPassword(e.target.value)}
        />
        <ErrorNotice>{error}</ErrorNotice>
        <button type="submit" className="button primary" disabled={busy}>
          {busy ? 'Logging in…' : 'Log in'}
        </button>
      </form>
      {signup !== 'closed' && (
        <p className="switch">
          No account yet? <Link to="/signup">Sign up</Link>
        </p>
      )}
    </AuthFrame>
  );
}
