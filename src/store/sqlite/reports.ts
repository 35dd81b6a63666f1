import { type SqlBool, sql } from 'kysely';
import type { ReportRunner, TimeCheck } from '../dashboard-types.js';
import { DIRECT_REPORTS, NO_TIME_CHECK } from '../shared/direct-reports.js';
import { REPORT_ALIVE_FUNCTION, type SqliteReader, SqliteReaderError } from './reader.js';

/**
 * The dashboard's reports on SQLite: on the reader threads (`reader.ts`), in the owner's turn, so the event
 * loop serves API calls meanwhile. Should no thread be available, a report runs on the serving connection
 * instead, as the query builder runs any query (unbounded). Without a reader (an in-memory database, whose
 * rows no other connection sees), every report runs there.
 */
export function sqliteReports(reader: SqliteReader | undefined, timeoutMs: number): ReportRunner {
  if (!reader) return DIRECT_REPORTS;
  return {
    async run(owner, build) {
      // The real clock, as the reader thread's check reads it (a store's `now` may be a test's).
      const deadline = Date.now() + timeoutMs;
      try {
        return await reader.all(build(timeCheck(deadline)).compile(), { owner, deadline, timeoutMs });
      } catch (error) {
        if (error instanceof SqliteReaderError && error.unavailable) return build(NO_TIME_CHECK).execute();
        throw error;
      }
    },
  };
}

/**
 * The reader thread's time check of a report's query over `table`: for one row in 1,024 read (by rowid)
 * SQLite calls `REPORT_ALIVE_FUNCTION`, which throws once the deadline is past and so ends the statement
 * (better-sqlite3 offers no other way to interrupt one). Often enough to stop within moments of the
 * deadline, rarely enough to cost little; the index entries carry the rowid, so the check reads no row an
 * index would not.
 */
function timeCheck(deadline: number): TimeCheck {
  return (query, table) =>
    query.where(
      sql<SqlBool>`((${sql.ref(`${table}.rowid`)} & 1023) <> 0 or ${sql.raw(REPORT_ALIVE_FUNCTION)}(${deadline}))`,
    );
}
