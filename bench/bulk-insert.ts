/**
 * Bulk data for the scaling run, written straight into the real schema (after `store.migrate()`) with
 * better-sqlite3 prepared statements in batched transactions. Rows look like the ones the gateway writes:
 * random ids, keys stored as the SHA-256 of real `sk-svc-…` keys (so lookups by hash cost what they cost),
 * one credit per account, and for every past request a usage row carrying its charge — what one
 * served request leaves behind.
 *
 * Bulk loading only: the connection turns journaling and syncing off while it writes (a crash would
 * leave a broken temp file, nothing else) and turns WAL back on before it closes.
 */
import { randomBytes } from 'node:crypto';
import { statfsSync } from 'node:fs';
import Database from 'better-sqlite3';
import { generateApiKey, hashApiKey, keyHint } from '../src/auth/api-key.js';
import { parseUsdToNano } from '../src/money/money.js';
import { CATALOG } from '../src/providers/catalog.js';
import { USAGE_COLUMNS } from '../src/store/usage-row.js';

const BATCH = 100_000;
/** Balance of each bulk account: $1,000. */
const ACCOUNT_BALANCE_NANO = 1_000 * 1_000_000_000;

export interface BulkAccount {
  id: string;
  keyId: string;
}

export interface BulkAccountsResult {
  seconds: number;
  /** Plaintext keys of `sample` accounts, evenly spread over all of them. */
  sampleKeys: string[];
  /** Every account (only when asked for: a million ids take memory). */
  accounts: BulkAccount[];
}

function open(file: string): Database.Database {
  const db = new Database(file);
  db.pragma('journal_mode = OFF');
  db.pragma('synchronous = OFF');
  db.pragma('cache_size = -1048576');
  db.pragma('temp_store = MEMORY');
  return db;
}

function close(db: Database.Database): void {
  db.pragma('journal_mode = WAL');
  db.close();
}

/**
 * Refuses to write into a schema that grew a required column this file does not fill: better to stop with
 * a clear message than to measure a database the gateway could not have produced.
 */
function checkColumns(db: Database.Database, table: string, filled: readonly string[]): void {
  const columns = db.prepare(`PRAGMA table_info(${table})`).all() as {
    name: string;
    notnull: number;
    dflt_value: unknown;
    pk: number;
  }[];
  if (columns.length === 0) throw new Error(`bulk insert: table ${table} does not exist (migrate first)`);
  for (const c of columns) {
    if (c.notnull === 1 && c.dflt_value === null && !filled.includes(c.name)) {
      throw new Error(
        `bulk insert: ${table}.${c.name} is a new required column; teach bench/bulk-insert.ts to fill it`,
      );
    }
  }
}

/**
 * Runs `fn` with the secondary indexes of `tables` dropped, then recreates them from the very SQL the
 * migrations created them with (read back from sqlite_master): building an index from sorted data once is
 * much faster than updating it row by row. Constraint indexes (primary keys, UNIQUE) stay, so every
 * insert is still checked.
 */
function withoutSecondaryIndexes(db: Database.Database, tables: readonly string[], fn: () => void): void {
  const indexes = db
    .prepare(
      `SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL AND tbl_name IN (${tables
        .map(() => '?')
        .join(', ')})`,
    )
    .all(...tables) as { name: string; sql: string }[];
  for (const index of indexes) db.exec(`DROP INDEX "${index.name.replace(/"/g, '""')}"`);
  try {
    fn();
  } finally {
    for (const index of indexes) db.exec(index.sql);
  }
}

/** Random hex ids with a prefix, `count` at a time from one buffer, sorted (see `insertSorted`). */
function idMaker(prefix: string, bytes: number): (count: number) => string[] {
  return (count) => {
    const buf = randomBytes(bytes * count);
    const out = new Array<string>(count);
    for (let i = 0; i < count; i++) out[i] = prefix + buf.toString('hex', i * bytes, (i + 1) * bytes);
    // Ids are random; inserting a batch in key order walks the primary-key index once instead of jumping
    // around it. The set of ids (what the database ends up holding) is as random as before.
    return out.sort();
  };
}

const ACCOUNT_COLUMNS = ['id', 'email', 'role', 'status', 'password_hash', 'balance_nano', 'created_at'];
const KEY_COLUMNS = [
  'id',
  'account_id',
  'name',
  'key_hash',
  'hint',
  'created_at',
  'last_used_at',
  'revoked_at',
];
const LEDGER_COLUMNS = ['id', 'account_id', 'kind', 'amount_nano', 'request_id', 'note', 'created_at'];

function insertSql(table: string, columns: readonly string[]): string {
  return `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`;
}

/** `count` accounts, each with a $1,000 credit and one API key. */
export function bulkAccounts(
  file: string,
  count: number,
  options: { sample: number; keepAccounts?: boolean; progress?: (line: string) => void },
): BulkAccountsResult {
  const started = performance.now();
  const db = open(file);
  try {
    checkColumns(db, 'accounts', ACCOUNT_COLUMNS);
    checkColumns(db, 'api_keys', KEY_COLUMNS);
    checkColumns(db, 'ledger', LEDGER_COLUMNS);
    const insertAccount = db.prepare(insertSql('accounts', ACCOUNT_COLUMNS));
    const insertKey = db.prepare(insertSql('api_keys', KEY_COLUMNS));
    const insertLedger = db.prepare(insertSql('ledger', LEDGER_COLUMNS));
    const accountIds = idMaker('acct_', 12);
    const keyIds = idMaker('key_', 12);
    const ledgerIds = idMaker('led_', 12);

    const sample = Math.min(options.sample, count);
    const sampled = new Set<number>();
    for (let j = 0; j < sample; j++) sampled.add(Math.floor((j * count) / sample));
    const sampleKeys: string[] = [];
    const accounts: BulkAccount[] = [];
    const now = Date.now();

    const batch = db.transaction((from: number, to: number) => {
      const n = to - from;
      const aIds = accountIds(n);
      const kIds = keyIds(n);
      const lIds = ledgerIds(n);
      const keys: { k: number; secret: string; hash: string }[] = [];
      for (let k = 0; k < n; k++) {
        const i = from + k;
        const created = now - (count - i) * 1000;
        insertAccount.run(
          aIds[k],
          `bench-${i}@example.com`,
          'user',
          'active',
          null,
          ACCOUNT_BALANCE_NANO,
          created,
        );
        insertLedger.run(lIds[k], aIds[k], 'credit', ACCOUNT_BALANCE_NANO, null, 'bench', created);
        const secret = generateApiKey();
        keys.push({ k, secret, hash: hashApiKey(secret) });
        if (sampled.has(i)) sampleKeys.push(secret);
        if (options.keepAccounts) accounts.push({ id: aIds[k] as string, keyId: kIds[k] as string });
      }
      // Keys in hash order: the unique index on key_hash is the one that grows at random otherwise.
      keys.sort((a, b) => (a.hash < b.hash ? -1 : a.hash > b.hash ? 1 : 0));
      for (const { k, secret, hash } of keys) {
        const created = now - (count - from - k) * 1000;
        insertKey.run(kIds[k], aIds[k], `key ${from + k}`, hash, keyHint(secret), created, null, null);
      }
    });
    withoutSecondaryIndexes(db, ['accounts', 'api_keys', 'ledger'], () => {
      for (let from = 0; from < count; from += BATCH) {
        batch(from, Math.min(count, from + BATCH));
        if (count > BATCH)
          options.progress?.(`accounts ${Math.min(count, from + BATCH).toLocaleString('en-US')}`);
      }
    });
    return { seconds: (performance.now() - started) / 1000, sampleKeys, accounts };
  } finally {
    close(db);
  }
}

/** USD per 1M tokens as a decimal string → nanodollars per 1M tokens (exact for the catalog's prices). */
function priceNano(usd: string): number {
  const nano = parseUsdToNano(usd);
  if (nano === undefined) throw new Error(`bad catalog price ${usd}`);
  return nano;
}

/**
 * `count` past requests spread round-robin over `accounts` and over the auto-rotation providers, spaced
 * evenly over the last 30 days: for each, a usage row recording its charge (a served request's hold row is
 * deleted when it settles: the holds table holds only the calls in flight). Each account then gets one
 * more credit equal to its charges, so the ledger still balances.
 */
export function bulkUsage(
  file: string,
  count: number,
  accounts: readonly BulkAccount[],
  progress?: (line: string) => void,
): { seconds: number } {
  if (accounts.length === 0) throw new Error('bulk usage needs accounts');
  const started = performance.now();
  const db = open(file);
  try {
    checkColumns(db, 'ledger', LEDGER_COLUMNS);
    checkColumns(db, 'usage', USAGE_COLUMNS);
    const insertLedger = db.prepare(insertSql('ledger', LEDGER_COLUMNS));
    const insertUsage = db.prepare(insertSql('usage', USAGE_COLUMNS));
    const ledgerIds = idMaker('led_', 12);
    const providers = CATALOG.filter((p) => p.inAutoRotation).map((p) => ({
      name: p.name,
      model: p.model,
      input: priceNano(p.inputPriceUsd),
      output: priceNano(p.outputPriceUsd),
    }));
    const charges = new Float64Array(accounts.length);
    const now = Date.now();
    const span = 30 * 86_400_000;
    let seed = 0x9e3779b9;
    const rand = () => {
      seed ^= seed << 13;
      seed ^= seed >>> 17;
      seed ^= seed << 5;
      return (seed >>> 0) / 4294967296;
    };

    const batch = db.transaction((from: number, to: number) => {
      const n = to - from;
      const requestIds = idMaker('chatcmpl-', 15)(n).map((id) => id.slice(0, 9 + 29));
      for (let k = 0; k < n; k++) {
        const i = from + k;
        const a = i % accounts.length;
        const account = accounts[a] as BulkAccount;
        const p = providers[i % providers.length] as (typeof providers)[0];
        const requestId = requestIds[k] as string;
        const prompt = 20 + Math.floor(rand() * 2000);
        const completion = 1 + Math.floor(rand() * 500);
        const inputCost = Math.ceil((prompt * p.input) / 1_000_000);
        const outputCost = Math.ceil((completion * p.output) / 1_000_000);
        const cost = inputCost + outputCost;
        const created = now - span + Math.floor((i * span) / count);
        const duration = 200 + Math.floor(rand() * 3000);
        insertUsage.run(
          requestId,
          account.id,
          account.keyId,
          p.name,
          p.model,
          prompt,
          completion,
          0,
          inputCost,
          outputCost,
          0,
          'ok',
          null,
          200,
          duration,
          0,
          created,
          cost,
        );
        charges[a] = (charges[a] as number) + cost;
      }
    });
    withoutSecondaryIndexes(db, ['usage'], () => {
      for (let from = 0; from < count; from += BATCH) {
        batch(from, Math.min(count, from + BATCH));
        if (count > BATCH) {
          const secs = ((performance.now() - started) / 1000).toFixed(0);
          progress?.(`usage ${Math.min(count, from + BATCH).toLocaleString('en-US')} (${secs}s)`);
        }
      }
      progress?.('rebuilding indexes');
    });
    const balanceCredits = db.transaction(() => {
      const ids = ledgerIds(accounts.length);
      accounts.forEach((account, a) => {
        const amount = charges[a] as number;
        if (amount > 0)
          insertLedger.run(ids[a], account.id, 'credit', amount, null, 'bench history', now - span);
      });
    });
    balanceCredits();
    return { seconds: (performance.now() - started) / 1000 };
  } finally {
    close(db);
  }
}

/** Free bytes on the file system holding `path`, or undefined where statfs is not available. */
export function freeBytes(path: string): number | undefined {
  try {
    const s = statfsSync(path);
    return s.bavail * s.bsize;
  } catch {
    return undefined;
  }
}

/** Rough disk use per row, measured on this schema (with its indexes), for the free-space check. */
export const BYTES_PER_ACCOUNT = 700;
export const BYTES_PER_PAST_REQUEST = 1_000;
