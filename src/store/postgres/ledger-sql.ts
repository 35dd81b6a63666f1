import { spendSetSql } from '../spend.js';
import { USAGE_COLUMN_TYPES, USAGE_COLUMNS } from '../usage-row.js';
import { prepareByName } from './prepared-statements.js';

/**
 * The PostgreSQL ledger's per-call writes, one statement each: the rules of `ledger-rules.ts` for a hold
 * and for a settle whose hold covers its cost, written in SQL. As a transaction of separate statements, a
 * hold would keep its account row locked across BEGIN, the UPDATE, the INSERT and COMMIT — four round trips
 * — and a settle across six or more, with every call of the account queued behind that lock. As one
 * statement of data-modifying CTEs, the row is locked for one statement, the call costs one round trip,
 * and the statement is atomic on its own, whatever other instances write at the same time.
 *
 * All four texts are fixed, built once below with numbered parameters; a call only puts its values in an
 * array, as building SQL per call costs more than the rest of the call's JavaScript. They run as named
 * prepared statements (unless DATABASE_PREPARED_STATEMENTS=false), so the server parses and plans each once
 * per connection.
 */

/**
 * The hold rule: `amount` is taken from an active account whose balance covers it; no row returned means
 * nothing changed. Only for keys without a spend limit: a key with one is held by the transaction of
 * `key-limit.ts`, which locks the key's row (no row is returned here, and the ledger sends it there).
 */
function takeFromBalance(account: string, amount: string, unlimitedKeys: string): string {
  return `update accounts set balance_nano = balance_nano - ${amount}
   where id = ${account} and status = 'active' and balance_nano >= ${amount}
     and not exists (select 1 from api_keys where id = any(${unlimitedKeys}) and limit_nano is not null)
   returning balance_nano`;
}

/** The settle rule when the hold covers the cost: the hold is closed and gives back what it held beyond it. */
function covers(held: string, cost: string): string {
  return `${held} >= ${cost}`;
}
function givenBack(held: string, cost: string): string {
  return `${held} - ${cost}`;
}

/**
 * A hold and its row. $1 amount, $2 account, $3 hold id, $4 request id, $5 owner, $6 created at, $7 expires
 * at, $8 key (null: none).
 */
export const PLACE_HOLD = `with charged as (
  ${takeFromBalance('$2::text', '$1::bigint', 'array[$8::text]')}
), hold as (
  insert into holds (id, account_id, request_id, amount_nano, owner, created_at, expires_at, key_id)
  select $3::text, $2::text, $4::text, $1::bigint, $5::text, $6::bigint, $7::bigint, $8::text
    from charged
)
select 1 as placed from charged`;

/**
 * Parameters of SETTLE before the usage row's values, which follow in `USAGE_COLUMNS` order; then the
 * day and the month of the request's start, for the account's spend counters (src/store/spend.ts).
 */
const SETTLE_FIXED_PARAMS = 3;
const USAGE_PARAMS = USAGE_COLUMNS.map(
  (column, i) => `$${SETTLE_FIXED_PARAMS + 1 + i}::${USAGE_COLUMN_TYPES[column]}`,
);
const SETTLE_DAY = `$${SETTLE_FIXED_PARAMS + USAGE_COLUMNS.length + 1}::bigint`;
const SETTLE_MONTH = `$${SETTLE_FIXED_PARAMS + USAGE_COLUMNS.length + 2}::bigint`;

/**
 * The usual settle — the hold covers the cost — closing the hold, giving back what it held beyond the
 * cost, adding the cost to the account's spend counters, and writing the usage row, which records the
 * charge (`charged_nano`, migration 0007). $1 hold id, $2 account, $3 cost, then the usage row, then the
 * request's day and month. The account exists whenever its hold does (foreign key), so `settled` has a
 * row exactly when `hold` has.
 */
export const SETTLE = `with hold as (
  delete from holds
   where id = $1::text and account_id = $2::text and ${covers('amount_nano', '$3::bigint')}
     and key_window is null
   returning amount_nano
), settled as (
  update accounts set balance_nano = accounts.balance_nano + ${givenBack('hold.amount_nano', '$3::bigint')},
         ${spendSetSql('accounts', '$3::bigint', SETTLE_DAY, '$3::bigint', SETTLE_MONTH)}
    from hold
   where accounts.id = $2::text
   returning accounts.balance_nano
), usage_row as (
  insert into usage (${USAGE_COLUMNS.join(', ')})
  select ${USAGE_PARAMS.join(', ')}
    from hold
)
select balance_nano from settled`;

/**
 * Several holds on one account: the account is charged their sum by the hold rule and every hold row is
 * written, or nothing happens. $1 account, $2 the sum, $3 owner, then one array each of hold ids, request
 * ids, amounts, created-at and expires-at times, keys. (A lone call keeps PLACE_HOLD, and a lone settle SETTLE:
 * a group of one, in arrays, costs more than the single statement.)
 */
export const PLACE_HOLDS = `with charged as (
  ${takeFromBalance('$1::text', '$2::bigint', '$9::text[]')}
), hold as (
  insert into holds (id, account_id, request_id, amount_nano, owner, created_at, expires_at, key_id)
  select h.id, $1::text, h.request_id, h.amount_nano, $3::text, h.created_at, h.expires_at, h.key_id
    from unnest($4::text[], $5::text[], $6::bigint[], $7::bigint[], $8::bigint[], $9::text[])
         as h(id, request_id, amount_nano, created_at, expires_at, key_id), charged
)
select 1 as placed from charged`;

/** SETTLES' parameters before the usage row's columns, which follow as one array each. */
const SETTLES_FIXED_PARAMS = 5;
const USAGE_ARRAYS = USAGE_COLUMNS.map(
  (column, i) => `$${SETTLES_FIXED_PARAMS + 1 + i}::${USAGE_COLUMN_TYPES[column]}[]`,
);

/**
 * Several usual settles of one account: each hold that still covers its cost is closed, the account gets
 * back the sum of what those holds held beyond their costs, and each gets its usage row, which records its
 * charge. $1 account, then one array each of hold ids ($2), costs ($3), the requests' days ($4) and months
 * ($5) and the usage rows' columns. The spend counters get the costs of the group's latest day and month
 * by the rule of src/store/spend.ts: a group's requests of an earlier day than its latest are of a day
 * that is over by then. Returns one row per settled hold; a hold missing from the answer was not touched.
 */
export const SETTLES = `with input as (
  select * from unnest($2::text[], $3::bigint[], $4::bigint[], $5::bigint[], ${USAGE_ARRAYS.join(', ')})
    as t(hold_id, cost, call_day, call_month, ${USAGE_COLUMNS.join(', ')})
), hold as (
  delete from holds h using input i
   where h.id = i.hold_id and h.account_id = $1::text and ${covers('h.amount_nano', 'i.cost')}
     and h.key_window is null
   returning h.id, h.amount_nano
), closed as (
  select i.*, hold.amount_nano as held from hold join input i on i.hold_id = hold.id
), latest as (
  select max(call_day) as day, max(call_month) as month from closed
), settled as (
  update accounts set balance_nano = accounts.balance_nano + (select sum(${givenBack('held', 'cost')}) from closed),
         ${spendSetSql(
           'accounts',
           '(select sum(cost) from closed where call_day = latest.day)::bigint',
           'latest.day',
           '(select sum(cost) from closed where call_month = latest.month)::bigint',
           'latest.month',
         )}
    from latest
   where accounts.id = $1::text and exists (select 1 from closed)
   returning accounts.balance_nano
), usage_row as (
  insert into usage (${USAGE_COLUMNS.join(', ')})
  select ${USAGE_COLUMNS.join(', ')} from closed
)
select closed.hold_id, settled.balance_nano from closed, settled`;

prepareByName(PLACE_HOLD, 'place_hold');
prepareByName(SETTLE, 'settle');
prepareByName(PLACE_HOLDS, 'place_holds');
prepareByName(SETTLES, 'settles');
