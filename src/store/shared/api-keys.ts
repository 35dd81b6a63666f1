import { newId } from '../new-id.js';
import { type ApiKeysTable, sumOf, toNumber, toNumberOrNull } from '../schema.js';
import type { AccountStatus, ApiKeyInfo, ApiKeys, KeyAuthRecord, KeyLookup } from '../types.js';
import type { SqlEngine } from './engine.js';

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

/** API keys on either database. */
export class ApiKeyQueries implements ApiKeys, KeyLookup {
  constructor(private readonly engine: SqlEngine) {}

  async createApiKey(input: {
    accountId: string;
    name: string;
    keyHash: string;
    hint: string;
    maxActive: number;
  }) {
    return this.engine.db.transaction().execute(async (trx) => {
      // The account's row, locked: two keys created at once for one account count each other. Only the
      // balance is read, as the store's tests create keys on databases before the spend counters too.
      await this.engine
        .lockRows(
          trx.selectFrom('accounts').select('balance_nano').where('id', '=', input.accountId),
          'no key update',
        )
        .executeTakeFirst();
      const active = await trx
        .selectFrom('api_keys')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('account_id', '=', input.accountId)
        .where('revoked_at', 'is', null)
        .executeTakeFirstOrThrow();
      if (sumOf(active.n) >= input.maxActive) {
        return { ok: false as const, reason: 'limit_reached' as const };
      }
      const row: ApiKeysTable = {
        id: newId('key'),
        account_id: input.accountId,
        name: input.name,
        key_hash: input.keyHash,
        hint: input.hint,
        created_at: this.engine.now(),
        last_used_at: null,
        revoked_at: null,
      };
      await trx.insertInto('api_keys').values(row).execute();
      return { ok: true as const, key: toKeyInfo(row) };
    });
  }

  async listApiKeys(accountId: string): Promise<ApiKeyInfo[]> {
    const rows = await this.engine.db
      .selectFrom('api_keys')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('created_at', 'asc')
      .orderBy('id', 'asc')
      .execute();
    return rows.map(toKeyInfo);
  }

  async revokeApiKey(accountId: string, keyId: string): Promise<'revoked' | 'not_found' | 'already_revoked'> {
    return this.engine.db.transaction().execute(async (trx) => {
      const row = await trx
        .selectFrom('api_keys')
        .select(['revoked_at'])
        .where('id', '=', keyId)
        .where('account_id', '=', accountId)
        .executeTakeFirst();
      if (!row) return 'not_found';
      if (row.revoked_at !== null) return 'already_revoked';
      await trx
        .updateTable('api_keys')
        .set({ revoked_at: this.engine.now() })
        .where('id', '=', keyId)
        .execute();
      return 'revoked';
    });
  }

  async getApiKey(accountId: string, keyId: string): Promise<ApiKeyInfo | undefined> {
    const row = await this.engine.db
      .selectFrom('api_keys')
      .selectAll()
      .where('id', '=', keyId)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return row && toKeyInfo(row);
  }

  async touchApiKey(keyId: string, at: number): Promise<void> {
    await this.engine.db.updateTable('api_keys').set({ last_used_at: at }).where('id', '=', keyId).execute();
  }

  async findKeyByHash(keyHash: string): Promise<KeyAuthRecord | undefined> {
    const row = await this.engine.db
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
}
