import { type ReactNode, useEffect, useRef } from 'react';
import { announce, focusOn } from '../announce';
import { Link, useLocation } from '../router';
import { useSession } from '../session';
import { setTheme, useTheme } from '../theme';

const USER_LINKS = [
  { to: '/', label: 'Overview' },
  { to: '/keys', label: 'API keys' },
  { to: '/usage', label: 'Usage' },
  { to: '/models', label: 'Models and prices' },
  { to: '/top-up', label: 'Top up' },
  { to: '/playground', label: 'Playground' },
  { to: '/account', label: 'Account' },
];

const ADMIN_LINKS = [
  { to: '/admin/accounts', label: 'Accounts' },
  { to: '/admin/invites', label: 'Invites' },
  { to: '/admin/providers', label: 'Providers' },
  { to: '/admin/codes', label: 'Top-up codes' },
  { to: '/admin/usage', label: 'Spend' },
  { to: '/admin/audit', label: 'Audit log' },
];

function NavLinks({ links, path }: { links: { to: string; label: string }[]; path: string }) {
  return (
    <ul>
      {links.map((l) => (
        <li key={l.to}>
          <Link to={l.to} aria-current={path === l.to ? 'page' : undefined}>
            {l.label}
          </Link>
        </li>
      ))}
    </ul>
  );
}

/** Light or dark, remembered in this browser; a toggle button, pressed while dark. */
function ThemeToggle() {
  const theme = useTheme();
  return (
    <button
      type="button"
      className="button secondary small theme-toggle"
      aria-pressed={theme === 'dark'}
      onClick={() => setTheme(theme === 'dark' ? 'light' : 'dark')}
    >
      Dark theme
    </button>
  );
}

/** The signed-in frame: a header with the account, the navigation, and the page. */
export function Layout({ title, children }: { title: string; children: ReactNode }) {
  const { account, logout } = useSession();
  const { path } = useLocation();
  const heading = useRef<HTMLHeadingElement>(null);
  const shownPath = useRef(path);
  useEffect(() => {
    // After a move to another page (not the first load), the focus goes to its heading, where a
    // keyboard or screen-reader user starts reading, and the new page is announced.
    if (shownPath.current === path) return;
    shownPath.current = path;
    focusOn(heading.current);
    announce(`${title} page`);
  }, [path, title]);
  return (
    <div className="shell">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <Link to="/" className="brand" aria-label="Tollgate overview">
          <svg viewBox="0 0 32 32" width="24" height="24" aria-hidden="true">
            <rect width="32" height="32" rx="7" fill="#1d4ed8" />
            <path d="M7 11h18v3H17.5v11h-3V14H7z" fill="#fff" />
          </svg>
          Tollgate
        </Link>
        <div className="who">
          <span className="email" title={account.email}>
            {account.email}
          </span>
          {account.role === 'admin' && <span className="badge">admin</span>}
          <ThemeToggle />
          <button type="button" className="button secondary small" onClick={() => void logout()}>
            Log out
          </button>
        </div>
      </header>
      <nav className="sidebar" aria-label="Dashboard">
        <NavLinks links={USER_LINKS} path={path} />
        {account.role === 'admin' && (
          <>
            <h2 className="nav-heading">Administration</h2>
            <NavLinks links={ADMIN_LINKS} path={path} />
          </>
        )}
      </nav>
      <main id="main" className="content" tabIndex={-1}>
        <h1 ref={heading} tabIndex={-1}>
          {title}
        </h1>
        {children}
      </main>
    </div>
  );
}
