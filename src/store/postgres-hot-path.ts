import { type Kysely, type QueryResult, type RawBuilder, sql } from 'kysely';
import { timeOrderedHex } from '../random.js';
import { prepareByName } from './prepared-statements.js';
import type { Database } from './schema.js';
import { toNumber } from './schema.js';
import type { PlaceHoldInput, SettleInput, UsageRecord } from './types.js';
import { USAGE_COLUMN_TYPES, USAGE_COLUMNS, usageValues } from './usage-row.js';

/** The usage insert's column list and the cast of each value, built once. */
const USAGE_INTO = sql.raw(USAGE_COLUMNS.join(', '));
const USAGE_CASTS = USAGE_COLUMNS.map((column) => sql.raw(USAGE_COLUMN_TYPES[column]));

/**
 * The per-request writes of the PostgreSQL store as one statement each. As a transaction of separate
 * statements, a hold keeps its account row locked across BEGIN, the UPDATE, the INSERT and COMMIT — four
 * round trips — and a settle across six or more; every call of one account queues behind that lock
 * (411 req/s for one account in docs/performance.md). As one statement of data-modifying CTEs, the row is
 * locked for one statement, and the call costs one round trip. A single statement is atomic on its own.
 *
 * Both run as named prepared statements (unless DATABASE_PREPARED_STATEMENTS=false): parsing and planning
 * them on every call took about a third of the server's CPU per call (docs/performance.md, ninth round).
 */

/** Compiles `query`, marks its text to be prepared under a name, and runs it. */
function runPrepared<R>(db: Kysely<Database>, query: RawBuilder<R>, label: string): Promise<QueryResult<R>> {
  const compiled = query.compile(db);
  prepareByName(compiled.sql, label);
  return db.executeQuery(compiled);
}

/**
 * DESIGN.md's atomic hold and the hold row, in one statement. Undefined when the account was not charged
 * (inactive, missing or short of money): nothing was written, and the caller words the refusal.
 */
export async function placeHoldAtOnce(
  db: Kysely<Database>,
  input: PlaceHoldInput,
): Promise<{ balanceNano: number } | undefined> {
  const query = sql<{ balance_nano: string | number }>`
    with charged as (
      update accounts set balance_nano = balance_nano - ${input.amountNano}::bigint
       where id = ${input.accountId}::text and status = 'active' and balance_nano >= ${input.amountNano}::bigint
       returning balance_nano
    ), hold as (
      insert into holds (id, account_id, request_id, amount_nano, owner, created_at, expires_at)
      select ${input.holdId}::text, ${input.accountId}::text, ${input.requestId}::text, ${input.amountNano}::bigint,
             ${input.owner}::text, ${input.createdAt}::bigint, ${input.expiresAt}::bigint
        from charged
    )
    select balance_nano from charged`;
  const { rows } = await runPrepared(db, query, 'place_hold');
  const row = rows[0];
  return row ? { balanceNano: toNumber(row.balance_nano) } : undefined;
}

/**
 * The usual settle — the hold covers the cost, no Idempotency-Key — in one statement: close the hold,
 * give back what it held beyond the cost, record the charge and the usage row. Undefined when that case
 * does not apply (the hold is gone or smaller than the cost): then nothing was written and the caller runs
 * the general settle, which also covers the shortfall rules.
 */
export async function settleCoveredAtOnce(
  db: Kysely<Database>,
  input: SettleInput,
  now: number,
): Promise<{ balanceNano: number } | undefined> {
  if (input.idempotency) return undefined;
  const u: UsageRecord = input.usage;
  const cost = input.costNano;
  // The account exists whenever its hold does (foreign key), so `settled` has a row exactly when `hold` has.
  const query = sql<{ balance_nano: string | number }>`
    with hold as (
      delete from holds
       where id = ${input.holdId}::text and account_id = ${input.accountId}::text
         and amount_nano >= ${cost}::bigint
       returning amount_nano
    ), settled as (
      update accounts set balance_nano = accounts.balance_nano + hold.amount_nano - ${cost}::bigint
        from hold
       where accounts.id = ${input.accountId}::text
       returning accounts.balance_nano
    ), charge as (
      insert into ledger (id, account_id, kind, amount_nano, request_id, note, created_at)
      select ${`led_${timeOrderedHex(6)}`}::text, ${input.accountId}::text, 'charge', ${cost}::bigint,
             ${u.requestId}::text, null, ${now}::bigint
        from hold where ${cost}::bigint > 0
    ), usage_row as (
      insert into usage (${USAGE_INTO})
      select ${sql.join(usageValues(u, 0).map((value, i) => sql`${value}::${USAGE_CASTS[i]}`))}
        from hold
    )
    select balance_nano from settled`;
  const { rows } = await runPrepared(db, query, 'settle');
  const row = rows[0];
  return row ? { balanceNano: toNumber(row.balance_nano) } : undefined;
}
