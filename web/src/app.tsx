import { type ReactNode, useCallback, useEffect, useMemo, useState } from 'react';
import { api, type SessionInfo, setCsrfToken, setSessionEndedHandler } from './api';
import { Layout } from './components/layout';
import { AccountPage } from './pages/account';
import { AdminAccountsPage } from './pages/admin-accounts';
import { AdminInvitesPage } from './pages/admin-invites';
import { AdminProvidersPage } from './pages/admin-providers';
import { KeysPage } from './pages/keys';
import { LoginPage } from './pages/login';
import { NotFoundPage } from './pages/not-found';
import { OverviewPage } from './pages/overview';
import { SignupPage } from './pages/signup';
import { UsagePage } from './pages/usage';
import { navigate, useLocation } from './router';
import { type Session, SessionContext } from './session';

const PAGES: Record<string, { title: string; admin?: boolean; render: () => ReactNode }> = {
  '/': { title: 'Overview', render: () => <OverviewPage /> },
  '/keys': { title: 'API keys', render: () => <KeysPage /> },
  '/usage': { title: 'Usage', render: () => <UsagePage /> },
  '/account': { title: 'Account', render: () => <AccountPage /> },
  '/admin/accounts': { title: 'Accounts', admin: true, render: () => <AdminAccountsPage /> },
  '/admin/invites': { title: 'Invites', admin: true, render: () => <AdminInvitesPage /> },
  '/admin/providers': { title: 'Providers', admin: true, render: () => <AdminProvidersPage /> },
};

export function App() {
  const [info, setInfo] = useState<SessionInfo>();
  const [loadError, setLoadError] = useState<string>();
  const { path } = useLocation();

  const refresh = useCallback(async () => {
    try {
      const next = await api<SessionInfo>('GET', '/session');
      setCsrfToken(next.authenticated ? next.csrf_token : undefined);
      setInfo(next);
      setLoadError(undefined);
    } catch {
      setLoadError('Cannot reach the Tollgate server. Reload the page to retry.');
    }
  }, []);

  useEffect(() => {
    setSessionEndedHandler(() => {
      void refresh();
    });
    void refresh();
  }, [refresh]);

  const logout = useCallback(
    async (everywhere = false) => {
      await api('POST', '/auth/logout', everywhere ? { everywhere: true } : {}).catch(() => undefined);
      await refresh();
      navigate('/login', { replace: true });
    },
    [refresh],
  );

  const session = useMemo<Session | undefined>(
    () =>
      info?.authenticated
        ? { account: info.account, signup: info.signup, apiBaseUrl: info.api_base_url, refresh, logout }
        : undefined,
    [info, refresh, logout],
  );

  const page = PAGES[path];
  const onAuthPage = path === '/login' || path === '/signup';
  useEffect(() => {
    // Signed in on the log-in or sign-up page (e.g. right after either): go to the overview.
    if (info?.authenticated && onAuthPage) navigate('/', { replace: true });
  }, [info, onAuthPage]);
  useEffect(() => {
    const title = info?.authenticated ? page?.title : path === '/signup' ? 'Sign up' : 'Log in';
    document.title = title ? `${title} · Tollgate` : 'Tollgate';
  }, [info, page, path]);

  if (loadError) {
    return (
      <main className="centered">
        <p className="notice error" role="alert">
          {loadError}
        </p>
      </main>
    );
  }
  if (!info) {
    return (
      <main className="centered" aria-busy="true">
        <p className="hint">Loading…</p>
      </main>
    );
  }
  if (!info.authenticated || !session) {
    return path === '/signup' ? (
      <SignupPage mode={info.signup} onSignedUp={refresh} />
    ) : (
      <LoginPage signup={info.signup} onLoggedIn={refresh} />
    );
  }
  if (onAuthPage) return null;
  const allowed = page && (!page.admin || session.account.role === 'admin');
  return (
    <SessionContext.Provider value={session}>
      <Layout title={allowed ? page.title : 'Not found'}>{allowed ? page.render() : <NotFoundPage />}</Layout>
    </SessionContext.Provider>
  );
}
