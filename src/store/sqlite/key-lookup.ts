import type SQLite from 'better-sqlite3';
import { type ControlColumns, controlsOf } from '../shared/key-controls-row.js';
import type { KeyAuthRecord, KeyLookup } from '../types.js';

type KeyRow = Partial<ControlColumns> & {
  key_id: string;
  key_name: string;
  account_id: string;
  revoked_at: number | null;
  account_status: KeyAuthRecord['accountStatus'];
};

/**
 * The key lookup of every authenticated call, as a statement prepared once (at its first use, after the
 * migrations). While a query-builder transaction is open on the shared connection it would read that
 * transaction's uncommitted rows, so the lookup then goes through the query builder, which waits for it.
 */
export class SqliteKeyLookup implements KeyLookup {
  private statement: SQLite.Statement | undefined;

  constructor(
    private readonly db: SQLite.Database,
    private readonly queued: KeyLookup,
  ) {}

  async findKeyByHash(keyHash: string): Promise<KeyAuthRecord | undefined> {
    if (this.db.inTransaction) return this.queued.findKeyByHash(keyHash);
    this.statement ??= this.db.prepare(
      `select k.id as key_id, k.name as key_name, k.account_id as account_id, k.revoked_at as revoked_at,
              a.status as account_status, k.limit_nano, k.limit_reset, k.expires_at, k.allowed, k.rpm, k.tpm
         from api_keys k join accounts a on a.id = k.account_id
        where k.key_hash = ?`,
    );
    const row = this.statement.get(keyHash) as KeyRow | undefined;
    if (!row) return undefined;
    return {
      keyId: row.key_id,
      keyName: row.key_name,
      accountId: row.account_id,
      accountStatus: row.account_status,
      revoked: row.revoked_at !== null,
      controls: controlsOf(row),
    };
  }
}
