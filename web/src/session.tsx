import { createContext, useContext } from 'react';
import type { Account, SignupMode } from './api';

export interface Session {
  account: Account;
  signup: SignupMode;
  apiBaseUrl: string;
  /** Re-reads the session (e.g. after a password change issued a new one). */
  refresh: () => Promise<void>;
  logout: (everywhere?: boolean) => Promise<void>;
}

export const SessionContext = createContext<Session | undefined>(undefined);

/** The signed-in session; only pages behind the login gate use it. */
export function useSession(): Session {
  const session = useContext(SessionContext);
  if (!session) throw new Error('useSession outside the signed-in app');
  return session;
}
