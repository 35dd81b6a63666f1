import { type CompiledQuery, type Kysely, sql } from 'kysely';
import type { ReportRunner } from '../dashboard-types.js';
import { DatabaseUnavailableError, isStatementTimeout } from '../database-unavailable.js';
import { FairSlots, type ReportLimits, ReportTimeoutError } from '../report-limits.js';
import type { Database } from '../schema.js';
import { NO_TIME_CHECK } from '../shared/direct-reports.js';

/**
 * The dashboard's reports on PostgreSQL: the server runs them, each holding a pooled connection while it
 * runs, so they take turns (`FairSlots`: one account's reports never hold up another's), and each is
 * cancelled by the server at its time bound, its wait for a turn included.
 */
export function postgresReports(db: Kysely<Database>, limits: ReportLimits): ReportRunner {
  const slots = new FairSlots(limits.slots, limits.perAccount);
  const { timeoutMs } = limits;
  return {
    run(owner, build) {
      const deadline = Date.now() + timeoutMs;
      const query = build(NO_TIME_CHECK).compile();
      return slots.run(
        owner,
        deadline,
        () => new ReportTimeoutError('waiting', timeoutMs),
        () => runUntil(db, query, deadline, timeoutMs),
      );
    },
  };
}

/**
 * Runs a report's query with a `statement_timeout` of what is left of its bound, or the connection's own
 * (`DATABASE_STATEMENT_TIMEOUT_MS`) when that is shorter.
 */
async function runUntil<O>(
  db: Kysely<Database>,
  query: CompiledQuery<O>,
  deadline: number,
  timeoutMs: number,
): Promise<O[]> {
  const leftMs = Math.ceil(deadline - Date.now());
  if (leftMs <= 0) throw new ReportTimeoutError('waiting', timeoutMs);
  try {
    return await db.transaction().execute(async (trx) => {
      await sql`select set_config('statement_timeout', least(
          nullif((select setting::bigint from pg_settings where name = 'statement_timeout'), 0),
          ${leftMs})::text, true)`.execute(trx);
      return (await trx.executeQuery(query)).rows;
    });
  } catch (error) {
    if (error instanceof DatabaseUnavailableError && isStatementTimeout(error.cause)) {
      throw new ReportTimeoutError('running', timeoutMs);
    }
    throw error;
  }
}
