import type { ReportRunner, TimeCheck } from '../dashboard-types.js';

/** The query as it is. */
export const NO_TIME_CHECK: TimeCheck = (query) => query;

/** Reports run where the query builder runs every query, unbounded (an in-memory database, tests). */
export const DIRECT_REPORTS: ReportRunner = {
  run: (_owner, build) => build(NO_TIME_CHECK).execute(),
};
