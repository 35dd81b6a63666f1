import { CompiledQuery, type Kysely } from 'kysely';
import { DatabaseUnavailableError } from './database-unavailable.js';
import { prepareByName } from './prepared-statements.js';
import type { Database } from './schema.js';
import { toNumber } from './schema.js';
import { spendDayOf, spendMonthOf, spendSetSql } from './spend.js';
import type { PlaceHoldInput, SettleInput } from './types.js';
import { USAGE_COLUMN_TYPES, USAGE_COLUMNS, usageValues } from './usage-row.js';

/**
 * The per-request writes of the PostgreSQL store as one statement each. As a transaction of separate
 * statements, a hold keeps its account row locked across BEGIN, the UPDATE, the INSERT and COMMIT — four
 * round trips — and a settle across six or more; every call of one account queues behind that lock
 * (411 req/s for one account in docs/performance.md). As one statement of data-modifying CTEs, the row is
 * locked for one statement, and the call costs one round trip. A single statement is atomic on its own.
 *
 * The calls of one account that arrive together share one statement of the same kind, with their values
 * in arrays (`PostgresGroupWrites`, below).
 *
 * All four texts are fixed, written once below with numbered parameters; a call only puts its values in
 * an array. Building them per call with Kysely's `sql` template (a frozen node per value, then the
 * compiler's walk over them) cost more instructions than the rest of the call's JavaScript
 * (docs/performance.md, tenth round). They run as named prepared statements (unless
 * DATABASE_PREPARED_STATEMENTS=false): parsing and planning them on every call took about a third of the
 * server's CPU per call (ninth round).
 */

/**
 * DESIGN.md's atomic hold and the hold row. $1 amount, $2 account, $3 hold id, $4 request id, $5 owner,
 * $6 created at, $7 expires at.
 */
const PLACE_HOLD = `with charged as (
  update accounts set balance_nano = balance_nano - $1::bigint
   where id = $2::text and status = 'active' and balance_nano >= $1::bigint
   returning balance_nano
), hold as (
  insert into holds (id, account_id, request_id, amount_nano, owner, created_at, expires_at)
  select $3::text, $2::text, $4::text, $1::bigint, $5::text, $6::bigint, $7::bigint
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
const SETTLE = `with hold as (
  delete from holds
   where id = $1::text and account_id = $2::text and amount_nano >= $3::bigint
   returning amount_nano
), settled as (
  update accounts set balance_nano = accounts.balance_nano + hold.amount_nano - $3::bigint,
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

prepareByName(PLACE_HOLD, 'place_hold');
prepareByName(SETTLE, 'settle');

type BalanceRow = { balance_nano: string | number };

/**
 * Places the hold and writes its row. False when the account was not charged (inactive, missing or
 * short of money): nothing was written, and the caller words the refusal.
 */
async function placeHoldAtOnce(db: Kysely<Database>, input: PlaceHoldInput): Promise<boolean> {
  const { rows } = await db.executeQuery(
    CompiledQuery.raw(PLACE_HOLD, [
      input.amountNano,
      input.accountId,
      input.holdId,
      input.requestId,
      input.owner,
      input.createdAt,
      input.expiresAt,
    ]),
  );
  return rows.length > 0;
}

/**
 * The usual settle in one statement (never with an Idempotency-Key: `PostgresGroupWrites.settle` sends
 * those to the general settle). Undefined when the hold is gone or smaller than the cost: then nothing was
 * written and the caller runs the general settle, which also covers the shortfall rules.
 */
async function settleCoveredAtOnce(
  db: Kysely<Database>,
  input: SettleInput,
): Promise<{ balanceNano: number } | undefined> {
  const values: unknown[] = [input.holdId, input.accountId, input.costNano];
  for (const value of usageValues(input.usage, 0, input.costNano)) values.push(value);
  values.push(spendDayOf(input.usage.createdAt), spendMonthOf(input.usage.createdAt));
  const { rows } = await db.executeQuery<BalanceRow>(CompiledQuery.raw(SETTLE, values));
  const row = rows[0];
  return row ? { balanceNano: toNumber(row.balance_nano) } : undefined;
}

// ── Group writes: the holds, and the settles, of one account queued together run as one statement ──

/**
 * Several holds on one account: the account is charged their sum with DESIGN.md's atomic statement and
 * every hold row is written, or nothing happens. $1 account, $2 the sum, $3 owner, then one array each of
 * hold ids, request ids, amounts, created-at and expires-at times. (A lone call keeps PLACE_HOLD, and a
 * lone settle SETTLE: sending every call as a group of one, in arrays, cost +17% instructions per call
 * at c1, docs/performance.md, tenth round.)
 */
const PLACE_HOLDS = `with charged as (
  update accounts set balance_nano = balance_nano - $2::bigint
   where id = $1::text and status = 'active' and balance_nano >= $2::bigint
   returning balance_nano
), hold as (
  insert into holds (id, account_id, request_id, amount_nano, owner, created_at, expires_at)
  select h.id, $1::text, h.request_id, h.amount_nano, $3::text, h.created_at, h.expires_at
    from unnest($4::text[], $5::text[], $6::bigint[], $7::bigint[], $8::bigint[])
         as h(id, request_id, amount_nano, created_at, expires_at), charged
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
const SETTLES = `with input as (
  select * from unnest($2::text[], $3::bigint[], $4::bigint[], $5::bigint[], ${USAGE_ARRAYS.join(', ')})
    as t(hold_id, cost, call_day, call_month, ${USAGE_COLUMNS.join(', ')})
), hold as (
  delete from holds h using input i
   where h.id = i.hold_id and h.account_id = $1::text and h.amount_nano >= i.cost
   returning h.id, h.amount_nano
), closed as (
  select i.*, hold.amount_nano as held from hold join input i on i.hold_id = hold.id
), latest as (
  select max(call_day) as day, max(call_month) as month from closed
), settled as (
  update accounts set balance_nano = accounts.balance_nano + (select sum(held - cost) from closed),
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

prepareByName(PLACE_HOLDS, 'place_holds');
prepareByName(SETTLES, 'settles');

/** Most calls of one account in one group statement. */
const MAX_GROUP = 128;

interface Waiting<I, O> {
  input: I;
  resolve: (value: O) => void;
  reject: (error: unknown) => void;
}

/**
 * Runs the writes of one account one group at a time: those queued while its previous statement was out
 * (or within one event-loop turn) go together. Different accounts run side by side, each group statement
 * locking a single account row, so two instances doing the same never wait on each other in a cycle.
 */
class PerAccountGroups<I, O> {
  private readonly accounts = new Map<string, { waiting: Waiting<I, O>[]; running: boolean }>();

  /** `runGroup` gives each input its own outcome; if it throws, every call of the group fails with it. */
  constructor(
    private readonly runGroup: (accountId: string, inputs: I[]) => Promise<PromiseSettledResult<O>[]>,
  ) {}

  submit(accountId: string, input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      let queue = this.accounts.get(accountId);
      if (!queue) {
        queue = { waiting: [], running: false };
        this.accounts.set(accountId, queue);
      }
      queue.waiting.push({ input, resolve, reject });
      if (queue.waiting.length === 1 && !queue.running) setImmediate(() => this.start(accountId));
    });
  }

  private start(accountId: string): void {
    const queue = this.accounts.get(accountId);
    if (!queue || queue.running) return;
    if (queue.waiting.length === 0) {
      this.accounts.delete(accountId);
      return;
    }
    const group = queue.waiting.splice(0, MAX_GROUP);
    queue.running = true;
    this.runGroup(
      accountId,
      group.map((w) => w.input),
    )
      // A group that failed as a whole: every call of it failed with that error.
      .catch((error: unknown) =>
        group.map((): PromiseSettledResult<O> => ({ status: 'rejected', reason: error })),
      )
      .then((outcomes) => {
        let away: DatabaseUnavailableError | undefined;
        for (let i = 0; i < group.length; i++) {
          const waiting = group[i] as Waiting<I, O>;
          const outcome = outcomes[i] as PromiseSettledResult<O>;
          if (outcome.status === 'fulfilled') waiting.resolve(outcome.value);
          else {
            if (outcome.reason instanceof DatabaseUnavailableError) away ??= outcome.reason;
            waiting.reject(outcome.reason);
          }
        }
        // The statement found the database away (no connection in time, a broken one, a statement past
        // its timeout): the calls that queued behind it meanwhile fail with the same error now. Each would
        // otherwise be sent only after that failure and wait out its own timeouts, so a call arriving
        // during an outage would take up to twice the configured bound to get its 503
        // (test/scale/faults.test.ts).
        if (away) for (const w of queue.waiting.splice(0)) w.reject(away);
      })
      .finally(() => {
        queue.running = false;
        this.start(accountId);
      });
  }
}

/** A settle's balance after it; undefined when the general settle must run instead. */
type Settled = { balanceNano: number } | undefined;

/**
 * The PostgreSQL store's per-call writes, grouped by account: the calls of one account that arrive
 * while its previous statement runs share the next one — one round trip and one lock of the account row
 * for the group instead of one each. A lone call runs the single statements above. Results are those of
 * running the calls one by one, in arrival order:
 *
 * - holds: when the balance covers the group's sum, every hold is placed; when it does not, the holds
 *   are placed one by one, so each is taken or refused exactly as alone;
 * - settles: those whose hold is missing or too small come back undefined and take the general settle,
 *   as alone. Each settled call reports the balance after the whole group's settles.
 *
 * A group statement that fails for any other reason than the database being away is retried call by call,
 * so a bad row fails only its own call.
 */
export class PostgresGroupWrites {
  private readonly holds = new PerAccountGroups<PlaceHoldInput, boolean>((accountId, inputs) =>
    this.placeGroup(accountId, inputs),
  );
  private readonly settles = new PerAccountGroups<SettleInput, Settled>((accountId, inputs) =>
    this.settleGroup(accountId, inputs),
  );

  constructor(private readonly db: Kysely<Database>) {}

  /** True when the hold was placed; false when the account was not charged and nothing was written. */
  placeHold(input: PlaceHoldInput): Promise<boolean> {
    return this.holds.submit(input.accountId, input);
  }

  /** The usual settle (no Idempotency-Key); undefined when the general settle must run instead. */
  settle(input: SettleInput): Promise<Settled> {
    if (input.idempotency) return Promise.resolve(undefined);
    return this.settles.submit(input.accountId, input);
  }

  private async placeGroup(
    accountId: string,
    inputs: PlaceHoldInput[],
  ): Promise<PromiseSettledResult<boolean>[]> {
    const first = inputs[0] as PlaceHoldInput;
    let sum = 0;
    for (const h of inputs) sum += h.amountNano;
    const oneOwner = inputs.every((h) => h.owner === first.owner);
    if (inputs.length > 1 && oneOwner && Number.isSafeInteger(sum)) {
      const placed = await unlessRefusedByRow(() =>
        this.db.executeQuery(
          CompiledQuery.raw(PLACE_HOLDS, [
            accountId,
            sum,
            first.owner,
            inputs.map((h) => h.holdId),
            inputs.map((h) => h.requestId),
            inputs.map((h) => h.amountNano),
            inputs.map((h) => h.createdAt),
            inputs.map((h) => h.expiresAt),
          ]),
        ),
      );
      if (placed && placed.rows.length > 0) return inputs.map(() => ({ status: 'fulfilled', value: true }));
    }
    // One call, or the balance does not cover them all, or a row was refused: one by one, in arrival order.
    return eachInTurn(inputs, (h) => placeHoldAtOnce(this.db, h));
  }

  private async settleGroup(
    accountId: string,
    items: SettleInput[],
  ): Promise<PromiseSettledResult<Settled>[]> {
    const holdIds = new Set(items.map((s) => s.holdId));
    if (items.length === 1 || holdIds.size !== items.length) return this.settleEach(items);
    const usage = items.map((s) => usageValues(s.usage, 0, s.costNano));
    const values: unknown[] = [
      accountId,
      items.map((s) => s.holdId),
      items.map((s) => s.costNano),
      items.map((s) => spendDayOf(s.usage.createdAt)),
      items.map((s) => spendMonthOf(s.usage.createdAt)),
    ];
    for (let c = 0; c < USAGE_COLUMNS.length; c++) values.push(usage.map((row) => row[c] ?? null));
    const result = await unlessRefusedByRow(() =>
      this.db.executeQuery<{ hold_id: string; balance_nano: string | number }>(
        CompiledQuery.raw(SETTLES, values),
      ),
    );
    if (!result) return this.settleEach(items);
    const balanceOf = new Map<string, number>();
    for (const row of result.rows) balanceOf.set(row.hold_id, toNumber(row.balance_nano));
    return items.map((s) => {
      const balanceNano = balanceOf.get(s.holdId);
      return { status: 'fulfilled', value: balanceNano === undefined ? undefined : { balanceNano } };
    });
  }

  /** One by one; a call the single statement cannot settle takes the general settle, which reports. */
  private settleEach(items: SettleInput[]): Promise<PromiseSettledResult<Settled>[]> {
    return eachInTurn(items, (s) => settleCoveredAtOnce(this.db, s).catch(noneUnlessAway));
  }
}

/**
 * Runs `run` for each input in turn, each with its own outcome. Once the database is away the rest fail
 * with the same error without another attempt (each would wait for its own timeout).
 */
async function eachInTurn<I, O>(
  inputs: I[],
  run: (input: I) => Promise<O>,
): Promise<PromiseSettledResult<O>[]> {
  const outcomes: PromiseSettledResult<O>[] = [];
  let away: DatabaseUnavailableError | undefined;
  for (const input of inputs) {
    if (away) {
      outcomes.push({ status: 'rejected', reason: away });
      continue;
    }
    try {
      outcomes.push({ status: 'fulfilled', value: await run(input) });
    } catch (error) {
      if (error instanceof DatabaseUnavailableError) away = error;
      outcomes.push({ status: 'rejected', reason: error });
    }
  }
  return outcomes;
}

/** A settle statement refused by the database (not away): undefined, so the general settle runs and reports. */
function noneUnlessAway(error: unknown): undefined {
  if (error instanceof DatabaseUnavailableError) throw error;
  return undefined;
}

/**
 * Runs a group statement; undefined if the database refused it (a bad row in the group, say), so the
 * caller runs the calls one by one. The database being away fails the whole group.
 */
async function unlessRefusedByRow<T>(run: () => Promise<T>): Promise<T | undefined> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof DatabaseUnavailableError) throw error;
    return undefined;
  }
}
