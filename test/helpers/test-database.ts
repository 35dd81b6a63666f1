import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { Redis } from 'ioredis';
import pg from 'pg';
import { redactUrlPassword } from '../../src/redact-url.js';
import { postgresTypes } from '../../src/store/postgres/open.js';

export type TestDialect = 'sqlite' | 'postgres';

/**
 * The store the suite runs against: `TEST_DATABASE=postgres` (set by the `postgres` vitest project) or
 * SQLite (the default). With PostgreSQL, every test database is a fresh schema on `TEST_POSTGRES_URL`,
 * so test files running in parallel never share state.
 */
export const TEST_DIALECT: TestDialect = process.env.TEST_DATABASE === 'postgres' ? 'postgres' : 'sqlite';
/** The PostgreSQL database tests create their schemas in. */
export const TEST_POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
/** The Redis tests use (each with a key prefix of its own); only when `TEST_REDIS=1`. */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const TEST_USES_REDIS = process.env.TEST_REDIS === '1';

const SCHEMA_PREFIX = 'tollgate_t_';
/** Schemas left behind by a test process that died are dropped by later runs after this long. */
const STALE_SCHEMA_MS = 6 * 3_600_000;

export interface TestDatabase {
  dialect: TestDialect;
  /** DATABASE_URL of the fresh database. */
  url: string;
  /** Runs one statement written with `?` placeholders, on a connection of the test's own. */
  query<T = Record<string, unknown>>(sqlText: string, params?: readonly unknown[]): Promise<T[]>;
  /** Closes the test's connection and drops the database (PostgreSQL: the schema). */
  drop(): Promise<void>;
}

/** A clear failure when the PostgreSQL the tests need is not there. */
export function postgresMissing(url: string, err: unknown): Error {
  return new Error(
    `PostgreSQL is not reachable at ${redactUrlPassword(url)} (${err instanceof Error ? err.message : String(err)}). ` +
      'The postgres half of the test suite and test/scale need PostgreSQL 15 and Redis 7: start them ' +
      '(see docs/deployment.md, "Running the tests"), or set TEST_POSTGRES_URL / TEST_REDIS_URL.',
  );
}

/** Connects an administrative client to the test server, with a clear message when it is not there. */
export async function connectAdmin(url = TEST_POSTGRES_URL): Promise<pg.Client> {
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: 5_000,
    types: postgresTypes,
  });
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (err) {
    await client.end().catch(() => undefined);
    throw postgresMissing(url, err);
  }
  return client;
}

/** `?` placeholders → `$1, $2, …` (tests write their SQL once for both stores). */
function numbered(sqlText: string): string {
  let n = 0;
  return sqlText.replace(/\?/g, () => `$${++n}`);
}

/**
 * A PostgreSQL URL that works in `schema` (the first of its search_path), optionally under another
 * application name. Commits are not waited for on disk (`synchronous_commit=off`): a test database
 * need not survive a power cut, and the suite would otherwise spend most of its time in fsync.
 */
export function urlWithSchema(base: string, schema: string, applicationName?: string): string {
  const params = [`options=${encodeURIComponent(`-c search_path=${schema} -c synchronous_commit=off`)}`];
  if (applicationName) params.push(`application_name=${encodeURIComponent(applicationName)}`);
  return `${base}${base.includes('?') ? '&' : '?'}${params.join('&')}`;
}

/** A fresh, empty PostgreSQL schema on the test server. */
export async function createPostgresSchema(
  base = TEST_POSTGRES_URL,
): Promise<{ schema: string; url: string; drop: () => Promise<void> }> {
  const schema = `${SCHEMA_PREFIX}${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const admin = await connectAdmin(base);
  try {
    await dropStaleSchemas(admin);
    await admin.query(`create schema ${schema}`);
  } finally {
    await admin.end();
  }
  return {
    schema,
    url: urlWithSchema(base, schema),
    async drop() {
      const client = await connectAdmin(base);
      try {
        await client.query(`drop schema if exists ${schema} cascade`);
      } finally {
        await client.end();
      }
    },
  };
}

async function dropStaleSchemas(admin: pg.Client): Promise<void> {
  const { rows } = await admin.query<{ nspname: string }>(
    'select nspname from pg_namespace where nspname like $1',
    [`${SCHEMA_PREFIX}%`],
  );
  for (const { nspname } of rows) {
    const created = Number.parseInt(nspname.slice(SCHEMA_PREFIX.length).split('_')[0] ?? '', 36);
    if (Number.isFinite(created) && Date.now() - created > STALE_SCHEMA_MS) {
      await admin.query(`drop schema if exists ${nspname} cascade`).catch(() => undefined);
    }
  }
}

/** A fresh database of the dialect under test: a file in `dir`, or a new PostgreSQL schema. */
export async function createTestDatabase(dir: string, file = 'tollgate.db'): Promise<TestDatabase> {
  if (TEST_DIALECT === 'sqlite') {
    const path = join(dir, file);
    let raw: SQLite.Database | undefined;
    return {
      dialect: 'sqlite',
      url: `sqlite:${path}`,
      async query<T>(sqlText: string, params: readonly unknown[] = []) {
        raw ??= new SQLite(path, { fileMustExist: true });
        const statement = raw.prepare(sqlText);
        if (statement.reader) return statement.all(...params) as T[];
        statement.run(...params);
        return [];
      },
      async drop() {
        raw?.close();
        raw = undefined;
      },
    };
  }
  const created = await createPostgresSchema();
  let client: pg.Client | undefined;
  return {
    dialect: 'postgres',
    url: created.url,
    async query<T>(sqlText: string, params: readonly unknown[] = []) {
      if (!client) {
        client = new pg.Client({ connectionString: created.url, types: postgresTypes });
        client.on('error', () => {});
        await client.connect();
      }
      const result = await client.query(numbered(sqlText), [...params]);
      return result.rows as T[];
    },
    async drop() {
      await client?.end().catch(() => undefined);
      client = undefined;
      await created.drop();
    },
  };
}

/** Runs `each` on every batch of keys of the test Redis that match `pattern` (SCAN). */
async function scanKeys(
  pattern: string,
  each: (redis: Redis, keys: string[]) => Promise<unknown>,
): Promise<void> {
  const redis = new Redis(TEST_REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0 });
  redis.on('error', () => {});
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
      if (keys.length > 0) await each(redis, keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

/** A Redis key prefix of the test's own, a way to list its keys, and a way to delete them afterwards. */
export function testRedisPrefix(): {
  prefix: string;
  keys: (suffixPattern?: string) => Promise<string[]>;
  cleanup: () => Promise<void>;
} {
  const prefix = `tollgate-test:${randomBytes(6).toString('hex')}:`;
  return {
    prefix,
    async keys(suffixPattern = '*') {
      const found: string[] = [];
      await scanKeys(`${prefix}${suffixPattern}`, async (_, keys) => found.push(...keys));
      return found;
    },
    async cleanup() {
      try {
        await scanKeys(`${prefix}*`, (redis, keys) => redis.del(...keys));
      } catch {
        // Best effort: the keys are small and the test Redis keeps nothing on disk.
      }
    },
  };
}
