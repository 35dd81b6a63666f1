import { randomBytes } from 'node:crypto';
import type SQLite from 'better-sqlite3';
import { type Kysely, Migrator, sql, type Transaction } from 'kysely';
import { migrationProvider } from './migrations.js';
import { PostgresGroupWrites } from './postgres-hot-path.js';
import { REFUSAL_BATCH, type RefusalCount, RefusalCounter } from './refusal-counts.js';
import { FairSlots, type ReportLimits, reportLimits } from './report-limits.js';
import {
  type ApiKeysTable,
  type Database,
  type IdempotencyTable,
  type NewAccountRow,
  refusedHold,
  toNumber,
  toNumberOrNull,
  type UsageTable,
} from './schema.js';
import {
  addSpend,
  NO_SPEND,
  SPEND_COLUMNS,
  type SpendCounters,
  spendAt,
  spendColumns,
  spendCountersOf,
  spendStarts,
} from './spend.js';
import type { SqliteCheckpointer } from './sqlite-checkpointer.js';
import { SqliteHotPath } from './sqlite-hot-path.js';
import type { SqliteReader } from './sqlite-reader.js';
import type {
  Account,
  AccountRole,
  AccountStatus,
  ApiKeyInfo,
  BeginIdempotentInput,
  BeginIdempotentResult,
  HoldsToRelease,
  KeyAuthRecord,
  LedgerCheckOptions,
  LedgerProblem,
  LedgerReport,
  LedgerShortfall,
  PlaceHoldInput,
  PlaceHoldResult,
  RefusalRecord,
  ReleaseInput,
  SettleInput,
  SettleResult,
  Store,
  UsageRecord,
} from './types.js';

function newId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString('hex')}`;
}

function toAccount(row: NewAccountRow): Account {
  return {
    id: row.id,
    email: row.email,
    role: row.role as AccountRole,
    status: row.status as AccountStatus,
    balanceNano: toNumber(row.balance_nano),
    createdAt: toNumber(row.created_at),
  };
}

function toKeyInfo(row: ApiKeysTable): ApiKeyInfo {
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    hint: row.hint,
    createdAt: toNumber(row.created_at),
    lastUsedAt: toNumberOrNull(row.last_used_at),
    revokedAt: toNumberOrNull(row.revoked_at),
  };
}

function usageRow(u: UsageRecord, shortfallNano: number, chargedNano: number): UsageTable {
  return {
    request_id: u.requestId,
    account_id: u.accountId,
    key_id: u.keyId,
    provider: u.provider,
    model: u.model,
    prompt_tokens: u.promptTokens,
    completion_tokens: u.completionTokens,
    usage_estimated: u.usageEstimated ? 1 : 0,
    input_cost_nano: u.inputCostNano,
    output_cost_nano: u.outputCostNano,
    shortfall_nano: shortfallNano,
    status: u.status,
    error_code: u.errorCode,
    http_status: u.httpStatus,
    duration_ms: u.durationMs,
    client_gone: u.clientGone ? 1 : 0,
    created_at: u.createdAt,
    charged_nano: chargedNano,
  };
}

function toUsage(row: UsageTable): UsageRecord {
  return {
    requestId: row.request_id,
    accountId: row.account_id,
    keyId: row.key_id,
    provider: row.provider,
    model: row.model,
    promptTokens: toNumber(row.prompt_tokens),
    completionTokens: toNumber(row.completion_tokens),
    usageEstimated: row.usage_estimated === 1,
    inputCostNano: toNumber(row.input_cost_nano),
    outputCostNano: toNumber(row.output_cost_nano),
    status: row.status === 'ok' ? 'ok' : 'error',
    errorCode: row.error_code,
    httpStatus: row.http_status,
    durationMs: toNumber(row.duration_ms),
    clientGone: row.client_gone === 1,
    createdAt: toNumber(row.created_at),
  };
}

function sumOf(value: string | number | bigint | null | undefined): number {
  return value === null || value === undefined ? 0 : toNumber(value);
}

/**
 * The store over Kysely: the only SQL in the project. Every balance change happens inside one
 * transaction together with its ledger row / hold row / usage row, so a crash can never leave a
 * half-applied change. Queries are written with the query builder only, so they run on SQLite and
 * PostgreSQL alike; row locks (`FOR UPDATE`) are taken where PostgreSQL needs them, while SQLite
 * serialises writers with BEGIN IMMEDIATE.
 */
export class KyselyStore implements Store {
  constructor(
    private readonly db: Kysely<Database>,
    readonly dialect: 'sqlite' | 'postgres',
    private readonly now: () => number = Date.now,
    /** A separate connection for migrations (PostgreSQL: one without the statement timeout); destroyed after. */
    private readonly openMigrationDb?: () => Kysely<Database>,
    /** SQLite: the connection itself, for the prepared per-request statements of `sqlite-hot-path.ts`. */
    private readonly sqlite?: SQLite.Database,
    /** SQLite: the background WAL checkpointer of a serving process, stopped before the connection closes. */
    private readonly checkpointer?: SqliteCheckpointer,
    /** SQLite on a file: the thread the dashboard's reports run on (`sqlite-reader.ts`). */
    readonly reader?: SqliteReader,
    /** The dashboard's reports: their time bound, and how many run at once (`report-limits.ts`). */
    reports: Partial<ReportLimits> = {},
  ) {
    this.reportLimits = reportLimits(reports);
  }

  readonly reportLimits: ReportLimits;
  private hotPath?: SqliteHotPath;
  private groupWritesOf?: PostgresGroupWrites;
  private reportSlotsOf?: FairSlots;
  private refusalsOf?: RefusalCounter;

  /**
   * Where the dashboard's reports take turns when the database runs them (PostgreSQL: a report holds a
   * pooled connection while it runs); shared by every dashboard repository of this store. SQLite's reader
   * keeps its own (`sqlite-reader.ts`).
   */
  get reportSlots(): FairSlots {
    this.reportSlotsOf ??= new FairSlots(this.reportLimits.slots, this.reportLimits.perAccount);
    return this.reportSlotsOf;
  }

  /** The counts of refused requests, added up before they are written (`refusal-counts.ts`). */
  private get refusals(): RefusalCounter {
    this.refusalsOf ??= new RefusalCounter((counts) => this.writeRefusals(counts));
    return this.refusalsOf;
  }

  /** PostgreSQL: the per-call writes, grouped by account (`postgres-hot-path.ts`). */
  private get groupWrites(): PostgresGroupWrites | undefined {
    if (this.dialect !== 'postgres') return undefined;
    this.groupWritesOf ??= new PostgresGroupWrites(this.db);
    return this.groupWritesOf;
  }

  /**
   * The prepared per-request statements (SQLite only), created on first use — after `migrate()` — and
   * usable only while no Kysely transaction is open on the shared connection (else the generic path
   * below runs and queues behind it).
   */
  private get hot(): SqliteHotPath | undefined {
    if (!this.sqlite) return undefined;
    this.hotPath ??= new SqliteHotPath(this.sqlite);
    return this.hotPath.busy ? undefined : this.hotPath;
  }

  /** The Kysely instance, for the other repositories of the same database (`dashboard-store.ts`). */
  get kysely(): Kysely<Database> {
    return this.db;
  }

  /** Applies every migration, or those up to and including `target` (a migration's name). */
  async migrate(target?: string): Promise<void> {
    const db = this.openMigrationDb?.() ?? this.db;
    try {
      // On PostgreSQL the migrator's own tables live in the schema the connection works in (the first of
      // its search_path); without naming it, Kysely mistakes another schema's tables for its own.
      let migrationTableSchema: string | undefined;
      if (this.dialect === 'postgres') {
        const found = await sql<{ schema: string }>`select current_schema() as schema`
          .execute(db)
          .catch((err: unknown) => {
            throw new Error(`cannot reach the database: ${err instanceof Error ? err.message : String(err)}`);
          });
        migrationTableSchema = found.rows[0]?.schema;
      }
      const migrator = new Migrator({
        db,
        provider: migrationProvider,
        ...(migrationTableSchema ? { migrationTableSchema } : {}),
      });
      const { error, results } =
        target === undefined ? await migrator.migrateToLatest() : await migrator.migrateTo(target);
      const failed = results?.find((r) => r.status === 'Error');
      if (error || failed) {
        const reason = error instanceof Error ? error.message : String(error ?? failed?.migrationName);
        throw new Error(`database migration failed: ${reason}`);
      }
    } finally {
      if (db !== this.db) await db.destroy();
    }
  }

  async close(): Promise<void> {
    await this.refusalsOf?.drain();
    this.hotPath?.drain();
    await this.reader?.close();
    await this.checkpointer?.stop();
    await this.db.destroy();
  }

  async ping(): Promise<void> {
    await sql`select 1`.execute(this.db);
  }

  // ── accounts ─────────────────────────────────────────────────────────────

  async createAccount(input: { email: string; role: AccountRole; passwordHash: string | null }) {
    const row: NewAccountRow = {
      id: newId('acct'),
      email: input.email,
      role: input.role,
      status: 'active',
      password_hash: input.passwordHash,
      balance_nano: 0,
      created_at: this.now(),
    };
    // One statement: two concurrent sign-ups of one email (two instances) cannot both pass a check.
    const inserted = await this.db
      .insertInto('accounts')
      .values(row)
      .onConflict((oc) => oc.column('email').doNothing())
      .executeTakeFirst();
    if (Number(inserted.numInsertedOrUpdatedRows ?? 0) !== 1) {
      return { ok: false as const, reason: 'email_taken' as const };
    }
    return { ok: true as const, account: toAccount(row) };
  }

  async getAccount(id: string): Promise<Account | undefined> {
    const row = await this.db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toAccount(row);
  }

  async findAccountByEmail(email: string): Promise<Account | undefined> {
    const row = await this.db
      .selectFrom('accounts')
      .selectAll()
      .where('email', '=', email)
      .executeTakeFirst();
    return row && toAccount(row);
  }

  // ── API keys ─────────────────────────────────────────────────────────────

  async createApiKey(input: {
    accountId: string;
    name: string;
    keyHash: string;
    hint: string;
    maxActive: number;
  }) {
    return this.db.transaction().execute(async (trx) => {
      await this.lockAccount(trx, input.accountId);
      const active = await trx
        .selectFrom('api_keys')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('account_id', '=', input.accountId)
        .where('revoked_at', 'is', null)
        .executeTakeFirstOrThrow();
      if (sumOf(active.n) >= input.maxActive) return { ok: false as const, reason: 'limit_reached' as const };
      const row: ApiKeysTable = {
        id: newId('key'),
        account_id: input.accountId,
        name: input.name,
        key_hash: input.keyHash,
        hint: input.hint,
        created_at: this.now(),
        last_used_at: null,
        revoked_at: null,
      };
      await trx.insertInto('api_keys').values(row).execute();
      return { ok: true as const, key: toKeyInfo(row) };
    });
  }

  async listApiKeys(accountId: string): Promise<ApiKeyInfo[]> {
    const rows = await this.db
      .selectFrom('api_keys')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('created_at', 'asc')
      .orderBy('id', 'asc')
      .execute();
    return rows.map(toKeyInfo);
  }

  async revokeApiKey(accountId: string, keyId: string): Promise<'revoked' | 'not_found' | 'already_revoked'> {
    return this.db.transaction().execute(async (trx) => {
      const row = await trx
        .selectFrom('api_keys')
        .select(['revoked_at'])
        .where('id', '=', keyId)
        .where('account_id', '=', accountId)
        .executeTakeFirst();
      if (!row) return 'not_found';
      if (row.revoked_at !== null) return 'already_revoked';
      await trx.updateTable('api_keys').set({ revoked_at: this.now() }).where('id', '=', keyId).execute();
      return 'revoked';
    });
  }

  async findKeyByHash(keyHash: string): Promise<KeyAuthRecord | undefined> {
    const hot = this.hot;
    if (hot) return hot.findKeyByHash(keyHash);
    const row = await this.db
      .selectFrom('api_keys')
      .innerJoin('accounts', 'accounts.id', 'api_keys.account_id')
      .select([
        'api_keys.id as keyId',
        'api_keys.name as keyName',
        'api_keys.account_id as accountId',
        'api_keys.revoked_at as revokedAt',
        'accounts.status as accountStatus',
      ])
      .where('api_keys.key_hash', '=', keyHash)
      .executeTakeFirst();
    if (!row) return undefined;
    return {
      keyId: row.keyId,
      keyName: row.keyName,
      accountId: row.accountId,
      accountStatus: row.accountStatus as AccountStatus,
      revoked: row.revokedAt !== null,
    };
  }

  async touchApiKey(keyId: string, at: number): Promise<void> {
    await this.db.updateTable('api_keys').set({ last_used_at: at }).where('id', '=', keyId).execute();
  }

  // ── money ────────────────────────────────────────────────────────────────

  async addCredit(input: { accountId: string; amountNano: number; note: string | null }) {
    if (!Number.isSafeInteger(input.amountNano) || input.amountNano <= 0) {
      throw new Error('a credit must be a positive whole number of nanodollars');
    }
    return this.db.transaction().execute(async (trx) => {
      const balance = await this.lockAccount(trx, input.accountId);
      if (balance === undefined) throw new Error(`no account ${input.accountId}`);
      const next = balance + input.amountNano;
      if (!Number.isSafeInteger(next))
        throw new Error('the balance would exceed the largest amount the store keeps exactly');
      await trx
        .updateTable('accounts')
        .set({ balance_nano: next })
        .where('id', '=', input.accountId)
        .execute();
      await trx
        .insertInto('ledger')
        .values({
          id: newId('led'),
          account_id: input.accountId,
          kind: 'credit',
          amount_nano: input.amountNano,
          request_id: null,
          note: input.note,
          created_at: this.now(),
        })
        .execute();
      return { balanceNano: next };
    });
  }

  // placeHold, settle and release hand the embedded SQLite store's promise straight back: an async
  // wrapper returning it would add a promise and three microtask turns to every call.
  placeHold(input: PlaceHoldInput): Promise<PlaceHoldResult> {
    if (!Number.isSafeInteger(input.amountNano) || input.amountNano < 0)
      return Promise.reject(new Error('invalid hold amount'));
    return this.hot?.placeHold(input) ?? this.placeHoldGeneric(input);
  }

  private async placeHoldGeneric(input: PlaceHoldInput): Promise<PlaceHoldResult> {
    if (this.groupWrites) {
      const placed = await this.groupWrites.placeHold(input);
      if (placed) return { ok: true };
      // Nothing was written: say why.
      return refusedHold(await this.accountState(this.db, input.accountId));
    }
    return this.db.transaction().execute(async (trx) => {
      // The one atomic statement of DESIGN.md "Holds": no row updated → nothing changed.
      const updated = await trx
        .updateTable('accounts')
        .set((eb) => ({ balance_nano: eb('balance_nano', '-', input.amountNano) }))
        .where('id', '=', input.accountId)
        .where('status', '=', 'active')
        .where('balance_nano', '>=', input.amountNano)
        .executeTakeFirst();
      if (Number(updated.numUpdatedRows) === 0)
        return refusedHold(await this.accountState(trx, input.accountId));
      await trx
        .insertInto('holds')
        .values({
          id: input.holdId,
          account_id: input.accountId,
          request_id: input.requestId,
          amount_nano: input.amountNano,
          owner: input.owner,
          created_at: input.createdAt,
          expires_at: input.expiresAt,
        })
        .execute();
      return { ok: true as const };
    });
  }

  settle(input: SettleInput): Promise<SettleResult> {
    if (!Number.isSafeInteger(input.costNano) || input.costNano < 0)
      return Promise.reject(new Error('invalid cost'));
    return this.hot?.settle(input) ?? this.settleGeneric(input);
  }

  private async settleGeneric(input: SettleInput): Promise<SettleResult> {
    if (this.groupWrites) {
      const done = await this.groupWrites.settle(input);
      if (done) return { balanceNano: done.balanceNano, chargedNano: input.costNano, shortfallNano: 0 };
    }
    return this.db.transaction().execute(async (trx) => {
      const held = (await this.closeHold(trx, input.holdId, input.accountId)) ?? 0;
      const account = await this.lockAccountWithSpend(trx, input.accountId);
      if (account === undefined) throw new Error(`no account ${input.accountId}`);
      // Charge from the hold first, then from the balance as far as it goes; never below zero.
      const available = account.balanceNano + held;
      const chargedNano = Math.min(input.costNano, available);
      const shortfallNano = input.costNano - chargedNano;
      const next = available - chargedNano;
      addSpend(account, chargedNano, input.usage.createdAt);
      await trx
        .updateTable('accounts')
        .set({ balance_nano: next, ...spendColumns(account) })
        .where('id', '=', input.accountId)
        .execute();
      // The usage row is the charge's record (migration 0007).
      await trx
        .insertInto('usage')
        .values(usageRow(input.usage, shortfallNano, chargedNano))
        .execute();
      if (input.idempotency) {
        await trx
          .updateTable('idempotency')
          .set({
            state: 'done',
            response_json: input.idempotency.render({ balanceNano: next, chargedNano, shortfallNano }),
          })
          .where('account_id', '=', input.accountId)
          .where('idem_key', '=', input.idempotency.key)
          .where('request_id', '=', input.usage.requestId)
          .execute();
      }
      return { balanceNano: next, chargedNano, shortfallNano };
    });
  }

  release(input: ReleaseInput): Promise<{ balanceNano: number }> {
    return this.hot?.release(input) ?? this.releaseGeneric(input);
  }

  private releaseGeneric(input: ReleaseInput): Promise<{ balanceNano: number }> {
    return this.db.transaction().execute(async (trx) => {
      const held = (await this.closeHold(trx, input.holdId, input.accountId)) ?? 0;
      const balance = await this.lockAccount(trx, input.accountId);
      if (balance === undefined) throw new Error(`no account ${input.accountId}`);
      const next = balance + held;
      if (held > 0) {
        await trx
          .updateTable('accounts')
          .set({ balance_nano: next })
          .where('id', '=', input.accountId)
          .execute();
      }
      if (input.usage)
        await trx
          .insertInto('usage')
          .values(usageRow(input.usage, 0, 0))
          .execute();
      return { balanceNano: next };
    });
  }

  async recordUsage(usage: UsageRecord): Promise<void> {
    const hot = this.hot;
    if (hot) return hot.recordUsage(usage);
    await this.db
      .insertInto('usage')
      .values(usageRow(usage, 0, 0))
      .execute();
  }

  recordRefusal(refusal: RefusalRecord): Promise<void> {
    return this.refusals.add(refusal);
  }

  /** One batch of refusal counts, each added to its row (created at its first refusal). */
  private writeRefusals(counts: RefusalCount[]): Promise<void> {
    const hot = this.hot;
    if (hot) return hot.countRefusals(counts);
    return this.upsertRefusals(counts);
  }

  private async upsertRefusals(counts: RefusalCount[]): Promise<void> {
    for (let i = 0; i < counts.length; i += REFUSAL_BATCH) {
      await this.db
        .insertInto('refusals')
        .values(
          counts.slice(i, i + REFUSAL_BATCH).map((c) => ({
            account_id: c.accountId,
            minute_start: c.minuteStart,
            key_id: c.keyId,
            error_code: c.errorCode,
            http_status: c.httpStatus,
            requests: c.requests,
          })),
        )
        .onConflict((oc) =>
          oc
            .columns(['account_id', 'minute_start', 'key_id', 'error_code'])
            .doUpdateSet((eb) => ({ requests: eb('refusals.requests', '+', eb.ref('excluded.requests')) })),
        )
        .execute();
    }
  }

  async releaseHolds(filter: HoldsToRelease): Promise<number> {
    let query = this.db.selectFrom('holds').select(['id', 'account_id']);
    if (filter.kind === 'expired') {
      query = query.where('expires_at', '<', filter.now);
      if (filter.keep !== undefined && filter.keep.length > 0)
        query = query.where('id', 'not in', filter.keep);
      const { self, ownersAliveSince } = filter;
      if (self !== undefined && ownersAliveSince !== undefined) {
        query = query.where((eb) =>
          eb.or([
            eb('owner', '=', self),
            eb(
              'owner',
              'not in',
              eb.selectFrom('instances').select('instances.owner').where('seen_at', '>=', ownersAliveSince),
            ),
          ]),
        );
      }
    }
    if (filter.kind === 'not_owned_by') query = query.where('owner', '!=', filter.owner);
    if (filter.kind === 'owned_by') query = query.where('owner', '=', filter.owner);
    if (filter.kind === 'of_stale_instances') {
      query = query
        .where('created_at', '<', filter.staleBefore)
        .where('owner', 'in', (eb) =>
          eb.selectFrom('instances').select('instances.owner').where('seen_at', '<', filter.staleBefore),
        );
    }
    const open = await query.execute();
    // One short transaction per hold (hold row, then account row, the order settle uses too): sweepers of
    // several instances and the settles they race never wait on each other in a cycle.
    let released = 0;
    for (const hold of open) {
      const closed = await this.db.transaction().execute(async (trx) => {
        const amount = await this.closeHold(trx, hold.id, hold.account_id);
        if (amount === undefined) return false;
        if (amount > 0) {
          await trx
            .updateTable('accounts')
            .set((eb) => ({ balance_nano: eb('balance_nano', '+', amount) }))
            .where('id', '=', hold.account_id)
            .execute();
        }
        return true;
      });
      if (closed) released += 1;
    }
    return released;
  }

  async markInstanceAlive(owner: string, now: number): Promise<void> {
    await this.db
      .insertInto('instances')
      .values({ owner, started_at: now, seen_at: now })
      .onConflict((oc) => oc.column('owner').doUpdateSet({ seen_at: now }))
      .execute();
  }

  async forgetInstance(owner: string): Promise<void> {
    await this.db.deleteFrom('instances').where('owner', '=', owner).execute();
  }

  async forgetStaleInstances(staleBefore: number): Promise<number> {
    const deleted = await this.db
      .deleteFrom('instances')
      .where('seen_at', '<', staleBefore)
      .where(({ not, exists, selectFrom }) =>
        not(exists(selectFrom('holds').select('holds.id').whereRef('holds.owner', '=', 'instances.owner'))),
      )
      .executeTakeFirst();
    return Number(deleted.numDeletedRows);
  }

  async openHoldsNano(accountId: string): Promise<number> {
    const row = await this.db
      .selectFrom('holds')
      .select((eb) => eb.fn.sum<string | number | null>('amount_nano').as('total'))
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return sumOf(row?.total);
  }

  async openHoldsTotal(): Promise<{ count: number; amountNano: number }> {
    const row = await this.db
      .selectFrom('holds')
      .select((eb) => [
        eb.fn.countAll<string | number>().as('count'),
        eb.fn.sum<string | number | null>('amount_nano').as('total'),
      ])
      .executeTakeFirst();
    return { count: sumOf(row?.count), amountNano: sumOf(row?.total) };
  }

  async ledgerCheck(options: LedgerCheckOptions = {}): Promise<LedgerReport> {
    const allowanceNano = options.shortfallAllowanceNano ?? 0;
    if (!Number.isSafeInteger(allowanceNano) || allowanceNano < 0) {
      throw new Error('the shortfall allowance must be a whole number of nanodollars, 0 or more');
    }
    // One read transaction, so the figures of every account come from the same snapshot (on PostgreSQL
    // that takes REPEATABLE READ; its default READ COMMITTED gives each statement a new snapshot).
    const transaction =
      this.dialect === 'postgres'
        ? this.db.transaction().setIsolationLevel('repeatable read')
        : this.db.transaction();
    const now = this.now();
    const { dayStart, monthStart } = spendStarts(now);
    return transaction.execute(async (trx) => {
      const accounts = await trx
        .selectFrom('accounts')
        .select(['id', 'email', 'balance_nano', ...SPEND_COLUMNS])
        .execute();
      const ledger = await trx
        .selectFrom('ledger')
        .select(['account_id', 'kind', (eb) => eb.fn.sum<string | number | null>('amount_nano').as('total')])
        .groupBy(['account_id', 'kind'])
        .execute();
      // Charges since migration 0007: the usage rows' charged_nano (null on rows written before it, which
      // sum ignores). In the same read of the table, the service not charged for: the rows' shortfalls.
      const usageCharges = await trx
        .selectFrom('usage')
        .select((eb) => [
          'account_id',
          eb.fn.sum<string | number | null>('charged_nano').as('total'),
          eb.fn.sum<string | number | null>('shortfall_nano').as('shortfall'),
          eb.fn
            .sum<string | number | null>(eb.case().when('shortfall_nano', '>', 0).then(1).else(0).end())
            .as('short_requests'),
        ])
        .groupBy('account_id')
        .execute();
      const holds = await trx
        .selectFrom('holds')
        .select(['account_id', (eb) => eb.fn.sum<string | number | null>('amount_nano').as('total')])
        .groupBy('account_id')
        .execute();
      // A request charged twice: two ledger rows (before 0007), or a ledger row and a charge on its usage row.
      const duplicates = await trx
        .selectFrom('ledger')
        .select(['account_id', 'request_id'])
        .where('kind', '=', 'charge')
        .where('request_id', 'is not', null)
        .groupBy(['account_id', 'request_id'])
        .having((eb) => eb.fn.countAll(), '>', 1)
        .execute();
      const chargedTwice = await trx
        .selectFrom('ledger')
        .innerJoin('usage', 'usage.request_id', 'ledger.request_id')
        .select('ledger.account_id')
        .where('ledger.kind', '=', 'charge')
        .where('usage.charged_nano', '>', 0)
        .execute();
      // The spend counters against the charges of the requests started today and this month.
      const spentSince = await this.chargesSinceByAccount(trx, [dayStart, monthStart]);

      const credits = new Map<string, number>();
      const charges = new Map<string, number>();
      for (const row of ledger)
        (row.kind === 'credit' ? credits : charges).set(row.account_id, sumOf(row.total));
      const shortOf = new Map<string, { requests: number; shortfallNano: number }>();
      for (const row of usageCharges) {
        charges.set(row.account_id, (charges.get(row.account_id) ?? 0) + sumOf(row.total));
        const shortfallNano = sumOf(row.shortfall);
        if (shortfallNano > 0)
          shortOf.set(row.account_id, { requests: sumOf(row.short_requests), shortfallNano });
      }
      const openHolds = new Map(holds.map((h) => [h.account_id, sumOf(h.total)]));
      const duplicated = new Set([...duplicates, ...chargedTwice].map((d) => d.account_id));

      const problems: LedgerProblem[] = [];
      const shortfalls: LedgerShortfall[] = [];
      for (const account of accounts) {
        const short = shortOf.get(account.id);
        if (short) shortfalls.push({ accountId: account.id, email: account.email, ...short });
        const figures = {
          accountId: account.id,
          email: account.email,
          creditsNano: credits.get(account.id) ?? 0,
          chargesNano: charges.get(account.id) ?? 0,
          openHoldsNano: openHolds.get(account.id) ?? 0,
          balanceNano: toNumber(account.balance_nano),
        };
        const discrepancyNano =
          figures.creditsNano - (figures.balanceNano + figures.openHoldsNano + figures.chargesNano);
        const [todayNano = 0, monthNano = 0] = spentSince.get(account.id) ?? [];
        const spent = { todayNano, monthNano };
        const counted = spendAt(spendCountersOf(account), now);
        const spendRight = spent.todayNano === counted.todayNano && spent.monthNano === counted.monthNano;
        const reason =
          figures.balanceNano < 0
            ? 'negative_balance'
            : discrepancyNano !== 0
              ? 'mismatch'
              : duplicated.has(account.id)
                ? 'duplicate_charge'
                : !spendRight
                  ? 'spend_counters'
                  : short && short.shortfallNano > allowanceNano
                    ? 'shortfall'
                    : undefined;
        if (reason) {
          problems.push({
            ...figures,
            discrepancyNano,
            reason,
            ...(reason === 'spend_counters'
              ? {
                  spend: {
                    ...spent,
                    countedTodayNano: counted.todayNano,
                    countedMonthNano: counted.monthNano,
                  },
                }
              : {}),
            ...(reason === 'shortfall' && short ? { shortfall: short } : {}),
          });
        }
      }
      // An account with another problem and a shortfall beyond the allowance too: the check fails for both.
      const overAllowance = shortfalls.some((s) => s.shortfallNano > allowanceNano);
      shortfalls.sort((a, b) => b.shortfallNano - a.shortfallNano || a.email.localeCompare(b.email));
      return {
        ok: problems.length === 0 && !overAllowance,
        accounts: accounts.length,
        problems,
        shortfalls,
        shortfallAllowanceNano: allowanceNano,
      };
    });
  }

  async chargesSince(accountId: string, since: readonly number[]): Promise<number[]> {
    if (since.length === 0) return [];
    return (await this.chargesSinceByAccount(this.db, since, accountId)).get(accountId) ?? since.map(() => 0);
  }

  async spendOf(accountId: string, now: number): Promise<{ todayNano: number; monthNano: number }> {
    const row = await this.db
      .selectFrom('accounts')
      .select(SPEND_COLUMNS)
      .where('id', '=', accountId)
      .executeTakeFirst();
    return spendAt(row ? spendCountersOf(row) : NO_SPEND, now);
  }

  async getApiKey(accountId: string, keyId: string): Promise<ApiKeyInfo | undefined> {
    const row = await this.db
      .selectFrom('api_keys')
      .selectAll()
      .where('id', '=', keyId)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return row && toKeyInfo(row);
  }

  async beginIdempotent(input: BeginIdempotentInput): Promise<BeginIdempotentResult> {
    return this.db.transaction().execute(async (trx) => {
      const claim = {
        body_hash: input.bodyHash,
        state: 'in_progress',
        request_id: input.requestId,
        response_json: null,
        locked_until: input.lockedUntil,
        created_at: input.now,
        expires_at: input.expiresAt,
      };
      // Insert-or-nothing, then read the row locked: of two requests racing with one key on two
      // instances, exactly one claims it. (The row may vanish in between, freed by a failed attempt:
      // then claim it again.)
      let row: IdempotencyTable | undefined;
      for (let attempt = 0; row === undefined; attempt++) {
        if (attempt === 3) throw new Error('idempotency key kept changing while being claimed');
        const inserted = await trx
          .insertInto('idempotency')
          .values({ account_id: input.accountId, idem_key: input.key, ...claim })
          .onConflict((oc) => oc.columns(['account_id', 'idem_key']).doNothing())
          .executeTakeFirst();
        if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 1) return { kind: 'started' as const };
        let existing = trx
          .selectFrom('idempotency')
          .selectAll()
          .where('account_id', '=', input.accountId)
          .where('idem_key', '=', input.key);
        if (this.dialect === 'postgres') existing = existing.forUpdate();
        row = await existing.executeTakeFirst();
      }
      const expired = toNumber(row.expires_at) <= input.now;
      const abandoned = row.state === 'in_progress' && toNumber(row.locked_until) <= input.now;
      if (!expired) {
        if (row.body_hash !== input.bodyHash) return { kind: 'mismatch' as const };
        if (row.state === 'done' && row.response_json !== null) {
          return { kind: 'replay' as const, responseJson: row.response_json };
        }
        if (!abandoned) return { kind: 'in_progress' as const };
      }
      await trx
        .updateTable('idempotency')
        .set(claim)
        .where('account_id', '=', input.accountId)
        .where('idem_key', '=', input.key)
        .execute();
      return { kind: 'started' as const };
    });
  }

  async abandonIdempotent(accountId: string, key: string, requestId: string): Promise<void> {
    await this.db
      .deleteFrom('idempotency')
      .where('account_id', '=', accountId)
      .where('idem_key', '=', key)
      .where('request_id', '=', requestId)
      .where('state', '=', 'in_progress')
      .execute();
  }

  async purgeIdempotency(now: number): Promise<number> {
    const result = await this.db.deleteFrom('idempotency').where('expires_at', '<=', now).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  async listUsage(accountId: string, options: { limit: number; before?: number }): Promise<UsageRecord[]> {
    let query = this.db.selectFrom('usage').selectAll().where('account_id', '=', accountId);
    if (options.before !== undefined) query = query.where('created_at', '<', options.before);
    const rows = await query
      .orderBy('created_at', 'desc')
      .orderBy('request_id', 'desc')
      .limit(options.limit)
      .execute();
    return rows.map(toUsage);
  }

  // ── helpers (inside a transaction) ───────────────────────────────────────

  /**
   * Reads an account's balance, locking its row on PostgreSQL (FOR NO KEY UPDATE: the lock an UPDATE of
   * the balance takes, which lets other transactions insert rows that reference the account meanwhile).
   * Only the balance: credits, releases and keys also run on a database before migration 0008 (the
   * store's tests of older databases set them up so).
   */
  private async lockAccount(trx: Transaction<Database>, accountId: string): Promise<number | undefined> {
    let query = trx.selectFrom('accounts').select('balance_nano').where('id', '=', accountId);
    if (this.dialect === 'postgres') query = query.forNoKeyUpdate();
    const row = await query.executeTakeFirst();
    return row ? toNumber(row.balance_nano) : undefined;
  }

  /** {@link lockAccount}, with the account's spend counters (for a settle, which adds to them). */
  private async lockAccountWithSpend(
    trx: Transaction<Database>,
    accountId: string,
  ): Promise<(SpendCounters & { balanceNano: number }) | undefined> {
    let query = trx
      .selectFrom('accounts')
      .select(['balance_nano', ...SPEND_COLUMNS])
      .where('id', '=', accountId);
    if (this.dialect === 'postgres') query = query.forNoKeyUpdate();
    const row = await query.executeTakeFirst();
    return row ? { balanceNano: toNumber(row.balance_nano), ...spendCountersOf(row) } : undefined;
  }

  /**
   * The charges of the requests started at or after each time of `since` (one figure per time), per account
   * (of `accountId` only, when given): usage rows' charged_nano since migration 0007, and ledger rows of kind
   * charge before it. Summed by the database: the rows themselves never come over.
   */
  private async chargesSinceByAccount(
    db: Kysely<Database> | Transaction<Database>,
    since: readonly number[],
    accountId?: string,
  ): Promise<Map<string, number[]>> {
    const sums = (table: 'usage' | 'ledger', amount: 'charged_nano' | 'amount_nano') => {
      let query = db
        .selectFrom(table)
        .select([
          'account_id',
          ...since.map((t, i) =>
            sql<
              string | number | null
            >`sum(case when created_at >= ${t} then ${sql.ref(amount)} else 0 end)`.as(`s${i}`),
          ),
        ])
        .where('created_at', '>=', Math.min(...since))
        .groupBy('account_id');
      if (accountId !== undefined) query = query.where('account_id', '=', accountId);
      return query;
    };
    const rows: Record<string, unknown>[] = [
      ...(await sums('usage', 'charged_nano').where('charged_nano', '>', 0).execute()),
      ...(await sums('ledger', 'amount_nano').where('kind', '=', 'charge').execute()),
    ];
    const out = new Map<string, number[]>();
    for (const row of rows) {
      const account = row.account_id as string;
      const figures = out.get(account) ?? since.map(() => 0);
      for (let i = 0; i < since.length; i++) {
        figures[i] = (figures[i] as number) + sumOf(row[`s${i}`] as string | number | null);
      }
      out.set(account, figures);
    }
    return out;
  }

  /** An account's balance and status (for wording a refused hold). */
  private accountState(db: Kysely<Database> | Transaction<Database>, accountId: string) {
    return db
      .selectFrom('accounts')
      .select(['balance_nano', 'status'])
      .where('id', '=', accountId)
      .executeTakeFirst();
  }

  /**
   * Closes an open hold — deletes its row — and returns its amount; undefined when it was already closed
   * (e.g. released by the expiry sweeper, or by another instance's), so its money is never returned twice.
   */
  private async closeHold(
    trx: Transaction<Database>,
    holdId: string,
    accountId: string,
  ): Promise<number | undefined> {
    const hold = await trx
      .selectFrom('holds')
      .select(['amount_nano'])
      .where('id', '=', holdId)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    if (!hold) return undefined;
    // The delete is the check under the row lock: of two closers racing, one deletes the row.
    const closed = await trx.deleteFrom('holds').where('id', '=', holdId).executeTakeFirst();
    return Number(closed.numDeletedRows) === 1 ? toNumber(hold.amount_nano) : undefined;
  }
}
