import type { ReactNode } from 'react';

export function ErrorNotice({ children }: { children: ReactNode }) {
  if (!children) return null;
  return (
    <p className="notice error" role="alert">
      {children}
    </p>
  );
}

export function SuccessNotice({ children }: { children: ReactNode }) {
  if (!children) return null;
  return <output className="notice success">{children}</output>;
}
