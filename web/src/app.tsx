import { type ReactNode, useCallback, useEffect, useMemo, useState } from 'react';
import { ApiError, api, type SessionInfo, setCsrfToken, setSessionEndedHandler } from './api';
import { Layout } from './components/layout';
import { AccountPage } from './pages/account';
import { AdminAccountsPage } from './pages/admin-accounts';
import { AdminAuditPage } from './pages/admin-audit';
import { AdminCodesPage } from './pages/admin-codes';
import { AdminInvitesPage } from './pages/admin-invites';
import { AdminProvidersPage } from './pages/admin-providers';
import { AdminUsagePage } from './pages/admin-usage';
import { KeysPage } from './pages/keys';
import { LoginPage } from './pages/login';
import { ModelsPage } from './pages/models';
import { NotFoundPage } from './pages/not-found';
import { OverviewPage } from './pages/overview';
import { PlaygroundPage } from './pages/playground';
import { SignupPage } from './pages/signup';
import { TopUpPage } from './pages/top-up';
import { UsagePage } from './pages/usage';
import { navigate, useLocation } from './router';
import { type Session, SessionContext } from './session';

const PAGES: Record<string, { title: string; admin?: boolean; render: () => ReactNode }> = {
  '/': { title: 'Overview', render: () => <OverviewPage /> },
  '/keys': { title: 'API keys', render: () => <KeysPage /> },
  '/usage': { title: 'Usage', render: () => <UsagePage /> },
  '/models': { title: 'Models and prices', render: () => <ModelsPage /> },
  '/top-up': { title: 'Top up', render: () => <TopUpPage /> },
  '/playground': { title: 'Playground', render: () => <PlaygroundPage /> },
  '/account': { title: 'Account', render: () => <AccountPage /> },
  '/admin/accounts': { title: 'Accounts', admin: true, render: () => <AdminAccountsPage /> },
  '/admin/invites': { title: 'Invites', admin: true, render: () => <AdminInvitesPage /> },
  '/admin/providers': { title: 'Providers', admin: true, render: () => <AdminProvidersPage /> },
  '/admin/codes': { title: 'Top-up codes', admin: true, render: () => <AdminCodesPage /> },
  '/admin/usage': { title: 'Spend and calls', admin: true, render: () => <AdminUsagePage /> },
  '/admin/audit': { title: 'Audit log', admin: true, render: () => <AdminAuditPage /> },
};

/**
 * A logout that could not reach the server is remembered here (`this` or `everywhere`) until the server
 * confirms it: the next load of the app, in any tab, ends the session before showing anything.
 */
const LOGOUT_PENDING = 'tollgate.logout-pending';

function pendingLogout(): 'this' | 'everywhere' | undefined {
  try {
    const v = window.localStorage.getItem(LOGOUT_PENDING);
    return v === 'this' || v === 'everywhere' ? v : undefined;
  } catch {
    return undefined;
  }
}

function setPendingLogout(value: 'this' | 'everywhere' | undefined): void {
  try {
    if (value) window.localStorage.setItem(LOGOUT_PENDING, value);
    else window.localStorage.removeItem(LOGOUT_PENDING);
  } catch {
    // Storage disabled: the retries of this page still run.
  }
}

/** Ends the session on the server: true once it is gone (also when it had already ended). */
async function endSession(everywhere: boolean): Promise<boolean> {
  try {
    await api('POST', '/auth/logout', everywhere ? { everywhere: true } : {});
    return true;
  } catch (err) {
    return err instanceof ApiError && err.status === 401;
  }
}

const RETRY_MS = 5000;

export function App() {
  const [info, setInfo] = useState<SessionInfo>();
  const [loadError, setLoadError] = useState<string>();
  const [loginNotice, setLoginNotice] = useState<string>();
  const [logoutFailed, setLogoutFailed] = useState(false);
  const { path } = useLocation();

  const refresh = useCallback(async () => {
    try {
      let next = await api<SessionInfo>('GET', '/session');
      const pending = pendingLogout();
      if (pending && next.authenticated) {
        // A logout that did not reach the server before: finish it first.
        setCsrfToken(next.csrf_token);
        if (!(await endSession(pending === 'everywhere'))) throw new Error('logout failed');
        next = await api<SessionInfo>('GET', '/session');
      }
      if (pending) {
        setPendingLogout(undefined);
        setLogoutFailed(false);
        if (!next.authenticated) setLoginNotice('You are logged out.');
      }
      setCsrfToken(next.authenticated ? next.csrf_token : undefined);
      setInfo(next);
      setLoadError(undefined);
    } catch {
      setLoadError('Cannot reach the Tollgate server. Reload the page to retry.');
    }
  }, []);

  useEffect(() => {
    setSessionEndedHandler(() => {
      setLoginNotice(
        'Your session has ended: it expired, you logged out elsewhere, or an administrator disabled the account. Log in again to continue.',
      );
      void refresh();
    });
    void refresh();
  }, [refresh]);

  const finishLogout = useCallback(async () => {
    const pending = pendingLogout() ?? 'this';
    if (!(await endSession(pending === 'everywhere'))) {
      setLogoutFailed(true);
      return;
    }
    setPendingLogout(undefined);
    setLogoutFailed(false);
    setCsrfToken(undefined);
    setLoginNotice('You are logged out.');
    await refresh();
    navigate('/login', { replace: true });
  }, [refresh]);

  const logout = useCallback(
    async (everywhere = false) => {
      // Remembered before the call: should it not arrive, the next load of the app finishes it.
      setPendingLogout(everywhere ? 'everywhere' : 'this');
      await finishLogout();
    },
    [finishLogout],
  );

  useEffect(() => {
    // A logout that could not reach the server is retried until it does.
    if (!logoutFailed) return;
    const retry = () => void finishLogout();
    const timer = window.setInterval(retry, RETRY_MS);
    window.addEventListener('online', retry);
    return () => {
      window.clearInterval(timer);
      window.removeEventListener('online', retry);
    };
  }, [logoutFailed, finishLogout]);

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

  return (
    <>
      <output id="announcer" className="visually-hidden" aria-live="polite" />
      {body()}
    </>
  );

  function body(): ReactNode {
    if (logoutFailed) {
      // The account's pages are hidden (what the browser can do), and the page says the truth: the
      // session is still open on the server until a retry gets through.
      return (
        <main className="centered">
          <div className="panel narrow">
            <h1>Not logged out yet</h1>
            <p className="notice error" role="alert">
              The server cannot be reached, so you are <strong>still logged in</strong>. Tollgate keeps trying
              and logs you out as soon as the server answers, also if you close this tab and open the
              dashboard again.
            </p>
            <button type="button" className="button primary" onClick={() => void finishLogout()}>
              Try to log out again
            </button>
          </div>
        </main>
      );
    }
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
        <LoginPage
          signup={info.signup}
          notice={loginNotice}
          onLoggedIn={async () => {
            setLoginNotice(undefined);
            await refresh();
          }}
        />
      );
    }
    if (onAuthPage) return null;
    const allowed = page && (!page.admin || session.account.role === 'admin');
    return (
      <SessionContext.Provider value={session}>
        <Layout title={allowed ? page.title : 'Not found'}>
          {allowed ? page.render() : <NotFoundPage />}
        </Layout>
      </SessionContext.Provider>
    );
  }
}
