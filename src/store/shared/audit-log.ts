import type { AuditEntry, NewAuditEntry } from '../dashboard-types.js';
import { newId } from '../new-id.js';
import { toNumber } from '../schema.js';
import type { DashboardEngine } from './engine.js';

/**
 * The administrators' actions (migration 0014): appended as they happen, read newest first in pages.
 * Nothing updates or deletes a row.
 */
export class AuditLogQueries {
  constructor(private readonly engine: DashboardEngine) {}

  async recordAudit(entry: NewAuditEntry): Promise<AuditEntry> {
    const row = {
      id: newId('aud'),
      created_at: entry.at ?? this.engine.now(),
      actor_id: entry.actorId,
      actor: entry.actor,
      action: entry.action,
      account_id: entry.accountId ?? null,
      target_id: entry.targetId ?? null,
      detail: entry.detail === undefined ? null : JSON.stringify(entry.detail),
    };
    await this.engine.db.insertInto('audit_log').values(row).execute();
    return toEntry(row);
  }

  /** The newest entries first, `limit` of them, before the entry `before` (a cursor: its time and id). */
  async listAudit(options: {
    limit: number;
    before?: { at: number; id: string } | undefined;
  }): Promise<AuditEntry[]> {
    let query = this.engine.db.selectFrom('audit_log').selectAll();
    const before = options.before;
    if (before) {
      query = query.where((eb) =>
        eb.or([
          eb('created_at', '<', before.at),
          eb.and([eb('created_at', '=', before.at), eb('id', '<', before.id)]),
        ]),
      );
    }
    const rows = await query
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(options.limit)
      .execute();
    return rows.map(toEntry);
  }
}

function toEntry(row: {
  id: string;
  created_at: number | string | bigint;
  actor_id: string | null;
  actor: string;
  action: string;
  account_id: string | null;
  target_id: string | null;
  detail: string | null;
}): AuditEntry {
  return {
    id: row.id,
    at: toNumber(row.created_at),
    actorId: row.actor_id,
    actor: row.actor,
    action: row.action,
    accountId: row.account_id,
    targetId: row.target_id,
    detail: row.detail === null ? null : (JSON.parse(row.detail) as Record<string, unknown>),
  };
}
