import { type Kysely, type Migration, type MigrationProvider, Migrator, SqliteAdapter, sql } from 'kysely';
import { spendDayOf, spendMonthOf, spendStarts } from './spend.js';

/**
 * Every schema change, in order, in one place. Written with Kysely's schema builder and portable types
 * (text, bigint, integer) so the same migrations run on SQLite and PostgreSQL. Never edit a migration
 * that has shipped: add a new one.
 */
const migrations: Record<string, Migration> = {
  '0001_initial': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('accounts')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('email', 'text', (c) => c.notNull().unique())
        .addColumn('role', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('password_hash', 'text')
        .addColumn('balance_nano', 'bigint', (c) => c.notNull().defaultTo(0).check(sql`balance_nano >= 0`))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('api_keys')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('key_hash', 'text', (c) => c.notNull().unique())
        .addColumn('hint', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('last_used_at', 'bigint')
        .addColumn('revoked_at', 'bigint')
        .execute();
      await db.schema.createIndex('api_keys_account').on('api_keys').column('account_id').execute();

      await db.schema
        .createTable('holds')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
        .addColumn('request_id', 'text', (c) => c.notNull())
        .addColumn('amount_nano', 'bigint', (c) => c.notNull().check(sql`amount_nano >= 0`))
        .addColumn('owner', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('closed_at', 'bigint')
        .addColumn('close_reason', 'text')
        .execute();
      await db.schema.createIndex('holds_open').on('holds').columns(['closed_at', 'expires_at']).execute();
      await db.schema.createIndex('holds_account').on('holds').columns(['account_id', 'closed_at']).execute();

      await db.schema
        .createTable('ledger')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
        .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind in ('credit', 'charge')`))
        .addColumn('amount_nano', 'bigint', (c) => c.notNull().check(sql`amount_nano > 0`))
        .addColumn('request_id', 'text', (c) => c.unique())
        .addColumn('note', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('ledger_account')
        .on('ledger')
        .columns(['account_id', 'created_at'])
        .execute();

      await db.schema
        .createTable('usage')
        .addColumn('request_id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
        .addColumn('key_id', 'text', (c) => c.notNull())
        .addColumn('provider', 'text')
        .addColumn('model', 'text')
        .addColumn('prompt_tokens', 'bigint', (c) => c.notNull())
        .addColumn('completion_tokens', 'bigint', (c) => c.notNull())
        .addColumn('usage_estimated', 'integer', (c) => c.notNull())
        .addColumn('input_cost_nano', 'bigint', (c) => c.notNull())
        .addColumn('output_cost_nano', 'bigint', (c) => c.notNull())
        .addColumn('shortfall_nano', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('error_code', 'text')
        .addColumn('http_status', 'integer', (c) => c.notNull())
        .addColumn('duration_ms', 'bigint', (c) => c.notNull())
        .addColumn('client_gone', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('usage_account')
        .on('usage')
        .columns(['account_id', 'created_at'])
        .execute();
    },
  },
  '0002_idempotency': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('idempotency')
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
        .addColumn('idem_key', 'text', (c) => c.notNull())
        .addColumn('body_hash', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('request_id', 'text', (c) => c.notNull())
        .addColumn('response_json', 'text')
        .addColumn('locked_until', 'bigint', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('idempotency_pk', ['account_id', 'idem_key'])
        .execute();
      await db.schema.createIndex('idempotency_expiry').on('idempotency').column('expires_at').execute();
    },
  },
  '0003_dashboard': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('sessions')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('last_seen_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('sessions_account').on('sessions').column('account_id').execute();
      await db.schema.createIndex('sessions_expiry').on('sessions').column('expires_at').execute();

      await db.schema
        .createTable('invites')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('code_hash', 'text', (c) => c.notNull().unique())
        .addColumn('created_by', 'text', (c) => c.notNull().references('accounts.id'))
        .addColumn('email', 'text')
        .addColumn('note', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('used_at', 'bigint')
        .addColumn('used_by', 'text')
        .addColumn('revoked_at', 'bigint')
        .execute();
      await db.schema.createIndex('invites_created').on('invites').column('created_at').execute();

      // The dashboard's usage pages: filters by key and by provider page through an account's rows in
      // time order; the providers page reads the last hour of every account.
      await db.schema
        .createIndex('usage_account_key')
        .on('usage')
        .columns(['account_id', 'key_id', 'created_at'])
        .execute();
      await db.schema
        .createIndex('usage_account_provider')
        .on('usage')
        .columns(['account_id', 'provider', 'created_at'])
        .execute();
      await db.schema.createIndex('usage_created').on('usage').column('created_at').execute();
    },
  },
  '0004_open_hold_indexes': {
    // Only open holds are ever looked up by expiry or by account (release, sums, the ledger check), so
    // both indexes keep open holds only: closing a hold removes its two entries instead of moving them,
    // and the indexes stay as small as the calls in flight however many holds have ever been closed.
    async up(db: Kysely<unknown>) {
      await db.schema.dropIndex('holds_open').execute();
      await db.schema.dropIndex('holds_account').execute();
      await db.schema
        .createIndex('holds_open_expiry')
        .on('holds')
        .column('expires_at')
        .where(sql.ref('closed_at'), 'is', null)
        .execute();
      await db.schema
        .createIndex('holds_open_account')
        .on('holds')
        .column('account_id')
        .where(sql.ref('closed_at'), 'is', null)
        .execute();
    },
  },
  '0005_holds_in_flight_only': {
    // A hold row now lives while its call is in flight: closing it deletes it (the call's outcome is its
    // usage row and, when charged, its ledger row). The table keeps only open holds, so it needs neither
    // closed_at/close_reason nor the two partial indexes. On SQLite the table is keyed by its id alone
    // (WITHOUT ROWID) and has no other index: placing a hold writes one B-tree instead of four, and every
    // query over the table reads the few pages of the calls in flight.
    // Open holds are carried over; closed ones, history nothing reads, are dropped with the old table.
    async up(db: Kysely<unknown>) {
      const sqlite = db.getExecutor().adapter instanceof SqliteAdapter;
      await db.schema
        .createTable('holds_in_flight')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
        .addColumn('request_id', 'text', (c) => c.notNull())
        .addColumn('amount_nano', 'bigint', (c) => c.notNull().check(sql`amount_nano >= 0`))
        .addColumn('owner', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .$call((table) => (sqlite ? table.modifyEnd(sql`without rowid`) : table))
        .execute();
      await sql`insert into holds_in_flight (id, account_id, request_id, amount_nano, owner, created_at, expires_at)
                select id, account_id, request_id, amount_nano, owner, created_at, expires_at
                  from holds where closed_at is null`.execute(db);
      await db.schema.dropTable('holds').execute();
      await db.schema.alterTable('holds_in_flight').renameTo('holds').execute();
      if (!sqlite) {
        await sql`alter index holds_in_flight_pkey rename to holds_pkey`.execute(db);
        // PostgreSQL keeps a deleted row's space until VACUUM, so between two autovacuums the table is
        // longer than the calls in flight: an account's open holds (GET /api/v1/key's `held`) are read
        // through an index instead of a scan of it.
        await db.schema.createIndex('holds_account').on('holds').column('account_id').execute();
      }
    },
  },
  '0006_instances': {
    // The serving processes of a database, each with the last time it said it was alive. On PostgreSQL
    // several instances share the database, so the open holds of one that died are released as soon as
    // its heartbeat is stale, not only at their expiry (a server releases the holds whose owner is gone).
    // The SQLite store has one server per file and does not use the table.
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('instances')
        .addColumn('owner', 'text', (c) => c.primaryKey())
        .addColumn('started_at', 'bigint', (c) => c.notNull())
        .addColumn('seen_at', 'bigint', (c) => c.notNull())
        .execute();
    },
  },
  '0007_charge_on_usage_row': {
    // A settled request's charge is recorded on its usage row (`charged_nano`) instead of in a ledger row
    // of its own: the usage row already carries the request's id (its primary key, so a request is charged
    // at most once), its account, its costs and its shortfall. A settle then writes one row instead of two,
    // four B-trees fewer. Rows written before keep a null here and
    // their charge rows in the ledger, which stays append-only: the ledger check and the spend figures add
    // both. Adding a nullable column rewrites nothing on either database.
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('usage').addColumn('charged_nano', 'bigint').execute();
    },
  },
  '0008_spend_counters': {
    // An account's charges today and this month, kept on its row by every settle (src/store/spend.ts), so
    // that GET /api/v1/key and the dashboard read one row instead of summing every usage row of the month.
    // Filled here from what the spend figures summed until
    // now: the usage rows' charges and an older database's charge rows in the ledger, of the requests
    // started today and this month (UTC, by this server's clock). Adding a column with a constant default
    // rewrites no row on either database; the fill reads each account's rows of this month once.
    async up(db: Kysely<unknown>) {
      for (const column of ['spend_day', 'spend_day_nano', 'spend_month', 'spend_month_nano']) {
        await db.schema
          .alterTable('accounts')
          .addColumn(column, 'bigint', (c) => c.notNull().defaultTo(0))
          .execute();
      }
      await fillSpendCounters(db, Date.now());
    },
  },
  '0009_one_usage_index_per_account': {
    // The usage row is most of what a settle writes, and each per-account index of it costs its own B-tree
    // insert, and WAL pages of its own in every group commit. The three
    // per-account indexes — by time, by key and time, by provider and time — become one by time that also
    // carries the key and the provider: every query of an account's rows in time order (the usage pages,
    // the chart, the spend sums) uses it as before, and a filter by key or provider is tested on the index
    // entry itself, reading the rows that match only. Such a filter now walks the account's entries until
    // its page fills (all of them, for a key with no rows at all), where it went straight to
    // them; the dashboard's reports run off the serving thread on SQLite and on the server on PostgreSQL.
    // Building the index reads the table once: on PostgreSQL writes to it wait meanwhile.
    async up(db: Kysely<unknown>) {
      await db.schema
        .createIndex('usage_account_time')
        .on('usage')
        .columns(['account_id', 'created_at', 'key_id', 'provider'])
        .execute();
      for (const index of ['usage_account_key', 'usage_account_provider', 'usage_account']) {
        await db.schema.dropIndex(index).execute();
      }
    },
  },
  '0010_refusals': {
    // A request refused before any hold (402 insufficient_balance) wrote a usage row of its own, so a key
    // of an empty account calling in a loop grew the database by a row per call, without bound. Such
    // requests are now counted per account, minute, key and error code: a flood adds to one row per
    // minute. The key's columns come in the order the dashboard reads them (an account's minutes, newest
    // first); on SQLite the table is that key alone (WITHOUT ROWID), one B-tree.
    // The refusal rows already written are folded into the counts and deleted (they moved no money, so the
    // ledger check is unchanged): one read of the usage table, as migration 0009's index build.
    async up(db: Kysely<unknown>) {
      const sqlite = db.getExecutor().adapter instanceof SqliteAdapter;
      await db.schema
        .createTable('refusals')
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
        .addColumn('minute_start', 'bigint', (c) => c.notNull())
        .addColumn('key_id', 'text', (c) => c.notNull())
        .addColumn('error_code', 'text', (c) => c.notNull())
        .addColumn('http_status', 'integer', (c) => c.notNull())
        .addColumn('requests', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('refusals_pk', ['account_id', 'minute_start', 'key_id', 'error_code'])
        .$call((table) => (sqlite ? table.modifyEnd(sql`without rowid`) : table))
        .execute();
      const refusalRows = sql`status = 'error' and error_code = 'insufficient_balance'
        and coalesce(charged_nano, 0) = 0 and shortfall_nano = 0 and input_cost_nano = 0 and output_cost_nano = 0`;
      await sql`insert into refusals (account_id, minute_start, key_id, error_code, http_status, requests)
                select account_id, (created_at / 60000) * 60000, key_id, error_code, max(http_status), count(*)
                  from usage where ${refusalRows}
                 group by account_id, (created_at / 60000) * 60000, key_id, error_code`.execute(db);
      await sql`delete from usage where ${refusalRows}`.execute(db);
    },
  },
  '0011_topup_codes': {
    // Top-up codes (docs/api.md "Top-up codes"): an admin creates a batch of codes of one amount; a user
    // redeems one for a credit. A code is stored as its SHA-256 only (the primary key: the redemption finds
    // it by hash), with the batch it belongs to and, once redeemed, by whom and when. Redeeming is one
    // transaction: the code is marked by an UPDATE that matches it only while it is unredeemed and
    // unexpired, and the credit is a ledger row of kind credit that names the batch (`code_batch_id`), so
    // the ledger check counts it as any other credit. Adding a nullable column rewrites no ledger row.
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('code_batches')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('amount_nano', 'bigint', (c) => c.notNull().check(sql`amount_nano > 0`))
        .addColumn('codes', 'integer', (c) => c.notNull())
        .addColumn('note', 'text')
        .addColumn('expires_at', 'bigint')
        .addColumn('created_by', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('code_batches_created').on('code_batches').column('created_at').execute();
      await db.schema
        .createTable('topup_codes')
        .addColumn('hash', 'text', (c) => c.primaryKey())
        .addColumn('batch_id', 'text', (c) => c.notNull().references('code_batches.id'))
        .addColumn('position', 'integer', (c) => c.notNull())
        .addColumn('hint', 'text', (c) => c.notNull())
        .addColumn('redeemed_by', 'text', (c) => c.references('accounts.id'))
        .addColumn('redeemed_at', 'bigint')
        .execute();
      await db.schema
        .createIndex('topup_codes_batch')
        .on('topup_codes')
        .columns(['batch_id', 'position'])
        .execute();
      await db.schema.alterTable('ledger').addColumn('code_batch_id', 'text').execute();
    },
  },
  '0012_key_controls': {
    // Per-key money controls (docs/api.md "Key controls"): a spend limit per window (`limit_nano`, null:
    // none; `limit_reset` daily | weekly | monthly | never), the figures of the window the row counts
    // (`window_start`, `window_spent_nano`, `window_held_nano`: src/store/key-window-rules.ts), an expiry,
    // an allow-list of providers and models (JSON text, null: all), and the key's own requests and tokens
    // per minute. A hold records its key and, when the key's limit counted it, the window it counted in
    // (`key_window`), so its settle and release give back to that window only. Nullable or defaulted
    // columns: no row is rewritten.
    async up(db: Kysely<unknown>) {
      const keys = [
        ['limit_nano', 'bigint'],
        ['expires_at', 'bigint'],
        ['allowed', 'text'],
        ['rpm', 'integer'],
        ['tpm', 'integer'],
      ] as const;
      for (const [name, type] of keys) await db.schema.alterTable('api_keys').addColumn(name, type).execute();
      await db.schema
        .alterTable('api_keys')
        .addColumn('limit_reset', 'text', (c) => c.notNull().defaultTo('never'))
        .execute();
      for (const name of ['window_start', 'window_spent_nano', 'window_held_nano']) {
        await db.schema
          .alterTable('api_keys')
          .addColumn(name, 'bigint', (c) => c.notNull().defaultTo(0))
          .execute();
      }
      await db.schema.alterTable('holds').addColumn('key_id', 'text').execute();
      await db.schema.alterTable('holds').addColumn('key_window', 'bigint').execute();
    },
  },
  '0013_cache_tokens': {
    // The cached parts of a call's prompt (docs/api.md "Billing"): the tokens the upstream read from its
    // cache and wrote to it, each part of `prompt_tokens` and priced apart. Rows written before are 0 in
    // both (their prompts were billed whole at the input price). A constant default rewrites no row.
    async up(db: Kysely<unknown>) {
      for (const column of ['cache_read_tokens', 'cache_write_tokens']) {
        await db.schema
          .alterTable('usage')
          .addColumn(column, 'bigint', (c) => c.notNull().defaultTo(0))
          .execute();
      }
    },
  },
  '0014_audit_log': {
    // The administrators' actions, by the dashboard and the CLI (docs/dashboard.md "Audit log"); append-only.
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('audit_log')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('actor_id', 'text')
        .addColumn('actor', 'text', (c) => c.notNull())
        .addColumn('action', 'text', (c) => c.notNull())
        .addColumn('account_id', 'text')
        .addColumn('target_id', 'text')
        .addColumn('detail', 'text')
        .execute();
      await db.schema
        .createIndex('audit_log_created')
        .on('audit_log')
        .columns(['created_at', 'id'])
        .execute();
    },
  },
};

/** Sets every account's spend counters to its charges of the requests started in `now`'s UTC day and month. */
export async function fillSpendCounters(db: Kysely<unknown>, now: number): Promise<void> {
  const { dayStart, monthStart } = spendStarts(now);
  const chargesSince = (since: number) => sql`(
      coalesce((select sum(u.charged_nano) from usage u
                 where u.account_id = accounts.id and u.created_at >= ${since} and u.charged_nano > 0), 0)
    + coalesce((select sum(l.amount_nano) from ledger l
                 where l.account_id = accounts.id and l.kind = 'charge' and l.created_at >= ${since}), 0))`;
  await sql`update accounts set
      spend_day = ${spendDayOf(now)}, spend_day_nano = ${chargesSince(dayStart)},
      spend_month = ${spendMonthOf(now)}, spend_month_nano = ${chargesSince(monthStart)}`.execute(db);
}

export const migrationProvider: MigrationProvider = {
  async getMigrations() {
    return migrations;
  },
};

/**
 * Applies every migration not yet applied to `db`, or those up to and including `target` (a migration's
 * name: the tests of older databases stop there). `migrationTableSchema`: where the migrator keeps its own
 * tables (PostgreSQL names the schema the connection works in; see `postgres/store.ts`).
 */
export async function migrateDatabase<DB>(
  db: Kysely<DB>,
  options: { target?: string | undefined; migrationTableSchema?: string | undefined } = {},
): Promise<void> {
  const { target, migrationTableSchema } = options;
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
}
