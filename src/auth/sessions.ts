import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { DashboardStore, SessionRecord } from '../store/dashboard-types.js';

/** A session is touched (its idle clock restarted) at most this often, to keep reads read-only. */
const TOUCH_INTERVAL_MS = 60_000;

/** 256 bits from the CSPRNG, base64url: the value of the session cookie. */
export function newSessionToken(): string {
  return randomBytes(32).toString('base64url');
}

/** The session's id in the database: SHA-256 of the token, so a database leak hands out no sessions. */
export function sessionIdOf(token: string): string {
  return createHash('sha256').update(`session:${token}`).digest('hex');
}

/**
 * The session's CSRF token: derived from the session token (a one-way, domain-separated hash), so it
 * needs no storage, changes with every new session, and reveals nothing about the cookie.
 */
export function csrfTokenOf(token: string): string {
  return createHash('sha256').update(`csrf:${token}`).digest('base64url');
}

/** Constant-time comparison of two short strings. */
export function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export interface SessionOptions {
  /** A session unused this long ends. */
  idleTimeoutMs: number;
  /** A session ends this long after it started, used or not. */
  maxAgeMs: number;
}

export interface StartedSession {
  token: string;
  csrfToken: string;
  expiresAt: number;
}

/** A session found for a request's cookie. */
export interface ActiveSession extends SessionRecord {
  csrfToken: string;
}

/**
 * Dashboard sessions in the database: a new random token at every login (so a session id planted
 * before login is worthless), idle and absolute expiry, and an end on logout, password change and
 * account disable.
 */
export class SessionManager {
  constructor(
    private readonly store: DashboardStore,
    private readonly options: SessionOptions,
    private readonly now: () => number = Date.now,
  ) {}

  /** A new session for an account (a login). */
  async start(accountId: string): Promise<StartedSession> {
    const started = this.prepare();
    await this.store.createSession({
      id: sessionIdOf(started.token),
      accountId,
      createdAt: this.now(),
      expiresAt: started.expiresAt,
    });
    return started;
  }

  /** The live session a token names, or undefined (unknown, expired, idle too long, account disabled). */
  async resolve(token: string): Promise<ActiveSession | undefined> {
    const id = sessionIdOf(token);
    const session = await this.store.findSession(id);
    if (!session) return undefined;
    const now = this.now();
    if (
      session.expiresAt <= now ||
      session.lastSeenAt + this.options.idleTimeoutMs <= now ||
      session.account.status !== 'active'
    ) {
      await this.store.deleteSession(id);
      return undefined;
    }
    if (now - session.lastSeenAt >= TOUCH_INTERVAL_MS) await this.store.touchSession(id, now);
    return { ...session, csrfToken: csrfTokenOf(token) };
  }

  /** Ends the session a token names (logout). */
  async end(token: string): Promise<void> {
    await this.store.deleteSession(sessionIdOf(token));
  }

  /** Ends every session of an account. */
  async endAll(accountId: string): Promise<number> {
    return this.store.deleteAccountSessions(accountId);
  }

  /**
   * Stores a new password hash and ends every session of the account in one transaction; the browser
   * that changed it gets a new session (a new token: the old cookie is dead like every other).
   */
  async changePassword(accountId: string, passwordHash: string): Promise<StartedSession> {
    const started = this.prepare();
    await this.store.changePassword({
      accountId,
      passwordHash,
      session: {
        id: sessionIdOf(started.token),
        accountId,
        createdAt: this.now(),
        expiresAt: started.expiresAt,
      },
    });
    return started;
  }

  /** Deletes expired and idle sessions. */
  purge(): Promise<number> {
    return this.store.purgeSessions(this.now(), this.options.idleTimeoutMs);
  }

  private prepare(): StartedSession {
    const token = newSessionToken();
    return { token, csrfToken: csrfTokenOf(token), expiresAt: this.now() + this.options.maxAgeMs };
  }
}
