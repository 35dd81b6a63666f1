import {
  CompiledQuery,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type DialectAdapter,
  type Driver,
  Kysely,
  PostgresAdapter,
  PostgresDialect,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryCompiler,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';
import pg from 'pg';
import {
  DatabaseUnavailableError,
  isConnectionFailure,
  isStatementTimeout,
} from '../database-unavailable.js';
import type { Database } from '../schema.js';
import type { PostgresOptions } from '../store-options.js';
import { preparedNameOf } from './prepared-statements.js';

const INT8_OID = 20;
const NUMERIC_OID = 1700;

/**
 * BIGINT (and the NUMERIC that `sum(bigint)` returns) read as JavaScript numbers when they are exact
 * integers; anything else stays a string, which `toNumber` then refuses loudly. The same reading as
 * SQLite's, so repositories see one row shape on both. https://node-postgres.com/features/types
 */
export const postgresTypes: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
    if (format !== 'binary' && (oid === INT8_OID || oid === NUMERIC_OID)) {
      return (value: string) => {
        const n = Number(value);
        return /^-?\d+$/.test(value) && Number.isSafeInteger(n) ? n : value;
      };
    }
    return format === undefined ? pg.types.getTypeParser(oid) : pg.types.getTypeParser(oid, format);
  }) as pg.CustomTypesConfig['getTypeParser'],
};

/** Tracks whether the database answers, reporting each change once (no log line per failed request). */
class Availability {
  private available = true;
  constructor(
    private readonly onChange: PostgresOptions['onAvailabilityChange'],
    private readonly onStatementTimeout: PostgresOptions['onStatementTimeout'],
  ) {}

  /** A statement ran out of time: refused like an outage, but the database is not reported down. */
  timedOut(cause: unknown): DatabaseUnavailableError {
    this.onStatementTimeout?.(cause);
    return new DatabaseUnavailableError(cause);
  }

  failed(cause: unknown): DatabaseUnavailableError {
    if (this.available) {
      this.available = false;
      this.onChange?.(false, cause);
    }
    return new DatabaseUnavailableError(cause);
  }

  succeeded(): void {
    if (!this.available) {
      this.available = true;
      this.onChange?.(true);
    }
  }
}

/** A statement that got no answer at all within the client-side bound. */
class NoAnswerError extends Error {
  constructor(ms: number) {
    super(`no answer from the database within ${ms} ms`);
    this.name = 'NoAnswerError';
  }
}

/**
 * One pooled connection. Every statement is also bounded on the client side (statement timeout +
 * connect timeout), which covers a network that silently drops packets: the server-side
 * `statement_timeout` cannot fire when its cancellation never arrives. A connection that failed that
 * way is marked broken and destroyed on release instead of going back to the pool.
 */
class GuardedConnection implements DatabaseConnection {
  private broken = false;
  /**
   * The pool stops listening for a client's errors while it is checked out; a connection lost between
   * two statements of a transaction would otherwise raise an unhandled 'error' and end the process.
   */
  private readonly onError = (err: Error) => {
    this.broken = true;
    this.availability.failed(err);
  };

  constructor(
    private readonly client: pg.PoolClient,
    private readonly clientTimeoutMs: number,
    private readonly availability: Availability,
    private readonly prepared: boolean,
  ) {
    client.on('error', this.onError);
  }

  async executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    if (this.broken) throw this.availability.failed(new Error('connection already broken'));
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new NoAnswerError(this.clientTimeoutMs)), this.clientTimeoutMs);
    });
    try {
      const text = compiledQuery.sql;
      const values = [...compiledQuery.parameters];
      // A named statement is parsed by the server once per connection (pg remembers which it sent).
      const name = this.prepared ? preparedNameOf(text) : undefined;
      const result = await Promise.race([
        name === undefined ? this.client.query(text, values) : this.client.query({ name, text, values }),
        timeout,
      ]);
      this.availability.succeeded();
      const { command, rowCount } = result;
      const counted =
        command === 'INSERT' || command === 'UPDATE' || command === 'DELETE' || command === 'MERGE';
      return {
        ...(counted ? { numAffectedRows: BigInt(rowCount ?? 0) } : {}),
        rows: (result.rows ?? []) as R[],
      };
    } catch (err) {
      if (isStatementTimeout(err)) throw this.availability.timedOut(err);
      if (isConnectionFailure(err) || err instanceof NoAnswerError) {
        this.broken = true;
        throw this.availability.failed(err);
      }
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  // biome-ignore lint/correctness/useYield: streaming is not offered by this store
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming queries are not supported by this store');
  }

  release(): void {
    this.client.off('error', this.onError);
    // A released error makes the pool destroy the client instead of reusing it.
    this.client.release(this.broken ? new Error('connection broken') : undefined);
  }
}

/** Kysely's PostgreSQL driver, with connection failures turned into `DatabaseUnavailableError`. */
class GuardedPostgresDriver implements Driver {
  constructor(
    private readonly pool: pg.Pool,
    private readonly clientTimeoutMs: number,
    private readonly availability: Availability,
    private readonly prepared: boolean,
  ) {}

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    try {
      const client = await this.pool.connect();
      return new GuardedConnection(client, this.clientTimeoutMs, this.availability, this.prepared);
    } catch (err) {
      throw this.availability.failed(err);
    }
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const isolation = settings.isolationLevel ? ` isolation level ${settings.isolationLevel}` : '';
    const mode = settings.accessMode ? ` ${settings.accessMode}` : '';
    await connection.executeQuery(CompiledQuery.raw(`start transaction${isolation}${mode}`));
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'));
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('rollback'));
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    (connection as GuardedConnection).release();
  }

  async destroy(): Promise<void> {
    await this.pool.end();
  }
}

/** Kysely's PostgreSQL dialect with the guarded driver. */
class GuardedPostgresDialect implements Dialect {
  constructor(private readonly driver: GuardedPostgresDriver) {}
  createDriver(): Driver {
    return this.driver;
  }
  createQueryCompiler(): QueryCompiler {
    return new PostgresQueryCompiler();
  }
  createAdapter(): DialectAdapter {
    return new PostgresAdapter();
  }
  createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new PostgresIntrospector(db);
  }
}

/**
 * Opens a pooled PostgreSQL database (https://node-postgres.com/apis/pool). Connections are opened on
 * demand, at most `poolMax`; each runs with `statement_timeout` and ends a transaction left idle for twice
 * that (`idle_in_transaction_session_timeout`), so a stuck client cannot hold an account's row lock.
 */
export function openPostgres(url: string, options: PostgresOptions): { db: Kysely<Database> } {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolMax,
    connectionTimeoutMillis: options.connectTimeoutMs,
    idleTimeoutMillis: 30_000,
    keepAlive: true,
    statement_timeout: options.statementTimeoutMs,
    idle_in_transaction_session_timeout: Math.max(2 * options.statementTimeoutMs, 1_000),
    application_name: 'tollgate',
    types: postgresTypes,
  });
  const availability = new Availability(options.onAvailabilityChange, options.onStatementTimeout);
  // An idle pooled connection the server closed (restart, idle timeout) is dropped by the pool; without
  // this listener its 'error' event would end the process. The next request finds out whether the
  // database is really gone.
  pool.on('error', () => {});
  const driver = new GuardedPostgresDriver(
    pool,
    options.statementTimeoutMs + options.connectTimeoutMs,
    availability,
    options.preparedStatements,
  );
  return { db: new Kysely<Database>({ dialect: new GuardedPostgresDialect(driver) }) };
}

/**
 * A separate single connection for migrations, without the statement timeout: a schema change on a large
 * table may take longer than any request should. Destroy it after use.
 */
export function openPostgresForMigrations(url: string, connectTimeoutMs: number): Kysely<Database> {
  const pool = new pg.Pool({
    connectionString: url,
    max: 1,
    connectionTimeoutMillis: connectTimeoutMs,
    application_name: 'tollgate-migrate',
    types: postgresTypes,
  });
  pool.on('error', () => {
    // The migration itself fails with the error; the idle connection's event needs no handling.
  });
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}
