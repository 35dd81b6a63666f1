import type SQLite from 'better-sqlite3';
import { ANSWERED_USAGE_SQL, USAGE_COLUMNS } from '../usage-row.js';

/**
 * The SQLite ledger's statements, each prepared once, at its first use: a store opened on a database migrated
 * only up to an earlier migration (as the tests of older databases do) may lack a table or a column a
 * statement names, and prepares it only once a later migration has added it.
 *
 * No statement has a RETURNING clause: SQLite runs one through an ephemeral table (a B-tree opened, its
 * first page zeroed, closed) on every execution, which costs more than a plain update followed by a read
 * of the same row, already in the page cache.
 */
export class LedgerStatements {
  #spendableBalance: SQLite.Statement | undefined;
  #balance: SQLite.Statement | undefined;
  #accountState: SQLite.Statement | undefined;
  #accountFigures: SQLite.Statement | undefined;
  #spendFigures: SQLite.Statement | undefined;
  #setBalance: SQLite.Statement | undefined;
  #setFigures: SQLite.Statement | undefined;
  #insertHold: SQLite.Statement | undefined;
  #closeHold: SQLite.Statement | undefined;
  #insertUsage: SQLite.Statement | undefined;
  #insertAnswered: SQLite.Statement | undefined;
  #finishIdempotent: SQLite.Statement | undefined;
  #insertCredit: SQLite.Statement | undefined;
  #countRefusal: SQLite.Statement | undefined;
  #keyWindow: SQLite.Statement | undefined;
  #setKeyWindow: SQLite.Statement | undefined;

  constructor(private readonly db: SQLite.Database) {}

  /**
   * The balance of an active account, plucked: the value itself, not a row object built per call (and
   * no status text copied out of the row).
   */
  get spendableBalance(): SQLite.Statement {
    this.#spendableBalance ??= this.db
      .prepare("select balance_nano from accounts where id = ? and status = 'active'")
      .pluck();
    return this.#spendableBalance;
  }

  get balance(): SQLite.Statement {
    this.#balance ??= this.db.prepare('select balance_nano from accounts where id = ?').pluck();
    return this.#balance;
  }

  /** An account's balance and status, as an `AccountState`. */
  get accountState(): SQLite.Statement {
    this.#accountState ??= this.db.prepare(
      'select balance_nano as balanceNano, status from accounts where id = ?',
    );
    return this.#accountState;
  }

  /** An account's balance, status and spend counters, as a `FiguresRow`. */
  get accountFigures(): SQLite.Statement {
    this.#accountFigures ??= this.db.prepare(
      `select balance_nano, status, spend_day, spend_day_nano, spend_month, spend_month_nano
         from accounts where id = ?`,
    );
    return this.#accountFigures;
  }

  /**
   * An account's balance and spend counters, as an array in the order of `setFigures` (raw: no row object
   * built per call, and no status text copied out of the row).
   */
  get spendFigures(): SQLite.Statement {
    this.#spendFigures ??= this.db
      .prepare(
        'select balance_nano, spend_day, spend_day_nano, spend_month, spend_month_nano from accounts where id = ?',
      )
      .raw();
    return this.#spendFigures;
  }

  get setBalance(): SQLite.Statement {
    this.#setBalance ??= this.db.prepare('update accounts set balance_nano = ? where id = ?');
    return this.#setBalance;
  }

  get setFigures(): SQLite.Statement {
    this.#setFigures ??= this.db.prepare(
      `update accounts set balance_nano = ?, spend_day = ?, spend_day_nano = ?, spend_month = ?,
                           spend_month_nano = ?
        where id = ?`,
    );
    return this.#setFigures;
  }

  get insertHold(): SQLite.Statement {
    this.#insertHold ??= this.db.prepare(
      `insert into holds (id, account_id, request_id, amount_nano, owner, created_at, expires_at, key_id, key_window)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    return this.#insertHold;
  }

  /** A key's limit and window figures, as a `KeyWindowRow`; no row when the key has no limit. */
  get keyWindow(): SQLite.Statement {
    this.#keyWindow ??= this.db
      .prepare(
        `select limit_nano, limit_reset, window_start, window_spent_nano, window_held_nano
           from api_keys where id = ? and limit_nano is not null`,
      )
      .raw();
    return this.#keyWindow;
  }

  get setKeyWindow(): SQLite.Statement {
    this.#setKeyWindow ??= this.db.prepare(
      'update api_keys set window_start = ?, window_spent_nano = ?, window_held_nano = ? where id = ?',
    );
    return this.#setKeyWindow;
  }

  /** Closes a hold by id, account and the amount it was placed with: one statement, no read first. */
  get closeHold(): SQLite.Statement {
    this.#closeHold ??= this.db.prepare(
      'delete from holds where id = ? and account_id = ? and amount_nano = ?',
    );
    return this.#closeHold;
  }

  get insertUsage(): SQLite.Statement {
    this.#insertUsage ??= this.db.prepare(
      `insert into usage (${USAGE_COLUMNS.join(', ')}) values (${USAGE_COLUMNS.map(() => '?').join(', ')})`,
    );
    return this.#insertUsage;
  }

  /** The usage row of a plain answer, its constant columns written into the statement (usage-row.ts). */
  get insertAnswered(): SQLite.Statement {
    this.#insertAnswered ??= this.db.prepare(
      `insert into usage (${USAGE_COLUMNS.join(', ')}) values (${ANSWERED_USAGE_SQL})`,
    );
    return this.#insertAnswered;
  }

  get finishIdempotent(): SQLite.Statement {
    this.#finishIdempotent ??= this.db.prepare(
      `update idempotency set state = 'done', response_json = ?
        where account_id = ? and idem_key = ? and request_id = ?`,
    );
    return this.#finishIdempotent;
  }

  get insertCredit(): SQLite.Statement {
    this.#insertCredit ??= this.db.prepare(
      `insert into ledger (id, account_id, kind, amount_nano, request_id, note, created_at)
       values (?, ?, 'credit', ?, null, ?, ?)`,
    );
    return this.#insertCredit;
  }

  /** Adds a count of refusals to its row of `refusals`, created by its first refusal. */
  get countRefusal(): SQLite.Statement {
    this.#countRefusal ??= this.db.prepare(
      `insert into refusals (account_id, minute_start, key_id, error_code, http_status, requests)
       values (?, ?, ?, ?, ?, ?)
       on conflict (account_id, minute_start, key_id, error_code) do update set requests = requests + excluded.requests`,
    );
    return this.#countRefusal;
  }
}
