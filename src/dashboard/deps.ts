import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Authenticator } from '../auth/authenticate.js';
import type { CodeRedemption } from '../auth/code-redemption.js';
import type { LoginThrottle } from '../auth/login-throttle.js';
import type { ActiveSession, SessionManager } from '../auth/sessions.js';
import type { Billing } from '../billing/billing.js';
import type { Config } from '../config/index.js';
import type { ProviderStatus } from '../routing/registry.js';
import type { DashboardStore, NewAuditEntry } from '../store/dashboard-types.js';
import type { Store } from '../store/types.js';

/*
 * What the dashboard's route groups share: their dependencies, the request fields the plugin's gate
 * (`plugin.ts`) fills in, and the access level of each route. The route groups import this file, the plugin
 * imports them, so no route group imports the plugin.
 */

/** Who may call a dashboard route: anyone, a logged-in account, or a logged-in admin. */
export type DashboardAccess = 'public' | 'user' | 'admin';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Dashboard routes: who may call it (default `user`). */
    access?: DashboardAccess;
  }
  interface FastifyRequest {
    /** The dashboard session of the request's cookie, when it names a live one. */
    dashboardSession: ActiveSession | undefined;
    /** The raw session token of that cookie (to end or rotate the session). */
    dashboardToken: string | undefined;
  }
}

export interface DashboardDeps {
  config: Config;
  store: Store;
  dashboardStore: DashboardStore;
  sessions: SessionManager;
  throttle: LoginThrottle;
  /** Top-up code redemptions, throttled per account and address. */
  codes: CodeRedemption;
  billing: Billing;
  authenticator: Authenticator;
  /** Every provider's configuration and state right now. */
  providers: () => ProviderStatus[];
  now: () => number;
  /**
   * The playground's routes (a front door of `api/`, given by `http/`), registered behind this plugin's
   * session and CSRF gate; `accountOf` names the signed-in account of a request.
   */
  playground?: (
    app: FastifyInstance,
    options: { accountOf(request: FastifyRequest): string },
  ) => Promise<void>;
}

/** The session of a request that passed the `user` or `admin` gate. */
export function sessionOf(request: FastifyRequest): ActiveSession {
  if (!request.dashboardSession) throw new Error('dashboard route reached without a session');
  return request.dashboardSession;
}

/** Writes an admin's action to the audit log, as done by the session's account. */
export async function audit(
  deps: Pick<DashboardDeps, 'dashboardStore'>,
  request: FastifyRequest,
  entry: Omit<NewAuditEntry, 'actorId' | 'actor'>,
): Promise<void> {
  const { account } = sessionOf(request);
  await deps.dashboardStore.recordAudit({ actorId: account.id, actor: account.email, ...entry });
}
