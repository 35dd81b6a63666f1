import { CompiledQuery, type Kysely } from 'kysely';
import { DatabaseUnavailableError } from '../database-unavailable.js';
import type { Database } from '../schema.js';
import { toNumber } from '../schema.js';
import { spendDayOf, spendMonthOf } from '../spend.js';
import type { PlaceHoldInput, SettleInput } from '../types.js';
import { USAGE_COLUMNS, usageValues } from '../usage-row.js';
import { PLACE_HOLD, PLACE_HOLDS, SETTLE, SETTLES } from './ledger-sql.js';

/**
 * The PostgreSQL ledger's per-call writes (`ledger-sql.ts`), grouped by account: the calls of one account
 * that arrive together share one statement of the same kind, with their values in arrays.
 */

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
      input.keyId ?? null,
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
            inputs.map((h) => h.keyId ?? null),
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
