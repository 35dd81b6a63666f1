import { type ReactNode, useEffect } from 'react';
import { announce } from '../announce';
import type { Loaded } from '../use-load';

export function ErrorNotice({ children }: { children: ReactNode }) {
  if (!children) return null;
  return (
    <p className="notice error" role="alert">
      {children}
    </p>
  );
}

/** A success message; screen readers hear it through the one live region (`announce`). */
export function SuccessNotice({ children }: { children: ReactNode }) {
  useEffect(() => {
    if (typeof children === 'string' && children) announce(children);
  }, [children]);
  if (!children) return null;
  return <p className="notice success">{children}</p>;
}

/** What went wrong loading `what`, with a Retry button (which reloads just that). */
export function LoadError({ loaded, what }: { loaded: Loaded<unknown>; what: string }) {
  if (!loaded.error) return null;
  return (
    <div className="notice error load-error" role="alert">
      <span>
        Could not load {what}: {loaded.error}
      </span>
      <button
        type="button"
        className="button secondary small"
        disabled={loaded.loading}
        onClick={loaded.reload}
      >
        {loaded.loading ? 'Retrying…' : 'Retry'}
      </button>
    </div>
  );
}
