import type { Kysely } from 'kysely';
import type { DashboardStore, ReportRunner } from '../dashboard-types.js';
import type { Database } from '../schema.js';
import { AccountAdminQueries } from './account-admin.js';
import { AuditLogQueries } from './audit-log.js';
import { DIRECT_REPORTS } from './direct-reports.js';
import { InviteQueries } from './invites.js';
import { KeyReportQueries } from './key-reports.js';
import { SessionQueries } from './sessions.js';
import { UsageReportQueries } from './usage-reports.js';
import { refusalTotals, usageTotals } from './usage-totals.js';

/**
 * The dashboard's repository over `db`, with its clock and where its reports run (`sqlite/reports.ts`,
 * `postgres/reports.ts`; by default, unbounded where the query builder runs). It uses only the query
 * builder, so it runs on SQLite and PostgreSQL alike. Each method is its part's, as `compose-store.ts`
 * composes the store: what a call does is in the part it names.
 */
export function composeDashboard(
  db: Kysely<Database>,
  now: () => number = Date.now,
  reports: ReportRunner = DIRECT_REPORTS,
): DashboardStore {
  const engine = { db, now, reports };
  const sessions = new SessionQueries(engine);
  const invites = new InviteQueries(engine);
  const admin = new AccountAdminQueries(engine);
  const keys = new KeyReportQueries(engine);
  const usage = new UsageReportQueries(engine);
  const audit = new AuditLogQueries(engine);
  return {
    createSession: (session) => sessions.createSession(session),
    findSession: (id) => sessions.findSession(id),
    touchSession: (id, at) => sessions.touchSession(id, at),
    deleteSession: (id) => sessions.deleteSession(id),
    deleteAccountSessions: (accountId) => sessions.deleteAccountSessions(accountId),
    purgeSessions: (at, idleMs) => sessions.purgeSessions(at, idleMs),

    inviteUsable: (codeHash, email) => invites.inviteUsable(codeHash, email),
    signUp: (input) => invites.signUp(input),
    createInvite: (input) => invites.createInvite(input),
    listInvites: (limit) => invites.listInvites(limit),
    getInvite: (id) => invites.getInvite(id),
    revokeInvite: (id) => invites.revokeInvite(id),

    findLogin: (email) => admin.findLogin(email),
    passwordHashOf: (accountId) => admin.passwordHashOf(accountId),
    changePassword: (input) => admin.changePassword(input),
    setAccountStatus: (accountId, status) => admin.setAccountStatus(accountId, status),
    listAccounts: (options) => admin.listAccounts(options),

    listKeysWithSpend: (accountId) => keys.listKeysWithSpend(accountId),
    keyHash: (accountId, keyId) => keys.keyHash(accountId, keyId),

    usagePage: (accountId, filters, options) => usage.usagePage(accountId, filters, options),
    usageDaily: (accountId, range, keyId) => usage.usageDaily(accountId, range, keyId),
    refusalsDaily: (accountId, range, keyId) => usage.refusalsDaily(accountId, range, keyId),
    providerTraffic: (since) => usage.providerTraffic(since),
    recentCredits: (accountId, limit) => usage.recentCredits(accountId, limit),
    usageTotals: (query) => usageTotals(engine, query),
    refusalTotals: (query) => refusalTotals(engine, query),

    recordAudit: (entry) => audit.recordAudit(entry),
    listAudit: (options) => audit.listAudit(options),
  };
}
