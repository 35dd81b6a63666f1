import type { Instances } from '../types.js';
import type { SqlEngine } from './engine.js';

/**
 * The serving processes of a database and when each last said it was alive. On PostgreSQL several share
 * the database, and the holds of one that went silent are released before their expiry; the SQLite store
 * has one server per file and does not use them.
 */
export class InstanceQueries implements Instances {
  constructor(private readonly engine: SqlEngine) {}

  async markInstanceAlive(owner: string, now: number): Promise<void> {
    await this.engine.db
      .insertInto('instances')
      .values({ owner, started_at: now, seen_at: now })
      .onConflict((oc) => oc.column('owner').doUpdateSet({ seen_at: now }))
      .execute();
  }

  async forgetInstance(owner: string): Promise<void> {
    await this.engine.db.deleteFrom('instances').where('owner', '=', owner).execute();
  }

  async forgetStaleInstances(staleBefore: number): Promise<number> {
    const deleted = await this.engine.db
      .deleteFrom('instances')
      .where('seen_at', '<', staleBefore)
      .where(({ not, exists, selectFrom }) =>
        not(exists(selectFrom('holds').select('holds.id').whereRef('holds.owner', '=', 'instances.owner'))),
      )
      .executeTakeFirst();
    return Number(deleted.numDeletedRows);
  }
}
