import type { Transaction } from 'kysely';
import { newId } from '../new-id.js';
import { type ApiKeysTable, type Database, sumOf, toNumber, toNumberOrNull } from '../schema.js';
import type { AccountStatus, ApiKeyInfo, ApiKeys, KeyAuthRecord, KeyChanges, KeyLookup } from '../types.js';
import type { SqlEngine } from './engine.js';
import { controlsOf, controlValues, restartsWindow, windowAt, windowOf } from './key-controls-row.js';

function toKeyInfo(row: ApiKeysTable): ApiKeyInfo {
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    hint: row.hint,
    createdAt: toNumber(row.created_at),
    lastUsedAt: toNumberOrNull(row.last_used_at),
    revokedAt: toNumberOrNull(row.revoked_at),
    controls: controlsOf(row),
    window: windowOf(row),
  };
}

/**
 * Applies `changes` to the key's row (locked by the caller's transaction). A new limit or reset counts the
 * window of `now` afresh: the charges of the key's requests started in it, and its open holds counted in it.
 */
async function applyChanges(
  trx: Transaction<Database>,
  keyId: string,
  changes: KeyChanges,
  now: number,
): Promise<void> {
  const values = controlValues(changes);
  if (restartsWindow(changes)) {
    const row = await trx
      .selectFrom('api_keys')
      .select(['limit_reset'])
      .where('id', '=', keyId)
      .executeTakeFirstOrThrow();
    const reset = changes.limitReset ?? controlsOf(row).limitReset;
    const start = windowAt(reset, now);
    const spent = await trx
      .selectFrom('usage')
      .select((eb) => eb.fn.sum<string | number | null>('charged_nano').as('n'))
      .where('key_id', '=', keyId)
      .where('created_at', '>=', start)
      .executeTakeFirst();
    const held = await trx
      .selectFrom('holds')
      .select((eb) => eb.fn.sum<string | number | null>('amount_nano').as('n'))
      .where('key_id', '=', keyId)
      .where('key_window', '=', start)
      .executeTakeFirst();
    values.window_start = start;
    values.window_spent_nano = sumOf(spent?.n);
    values.window_held_nano = sumOf(held?.n);
  }
  if (Object.keys(values).length > 0) {
    await trx.updateTable('api_keys').set(values).where('id', '=', keyId).execute();
  }
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
    controls?: KeyChanges;
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
      if (input.controls) await applyChanges(trx, row.id, input.controls, row.created_at as number);
      const created = input.controls
        ? await trx.selectFrom('api_keys').selectAll().where('id', '=', row.id).executeTakeFirstOrThrow()
        : row;
      return { ok: true as const, key: toKeyInfo(created) };
    });
  }

  async updateApiKey(accountId: string, keyId: string, changes: KeyChanges): Promise<ApiKeyInfo | undefined> {
    return this.engine.db.transaction().execute(async (trx) => {
      // The key's row, locked: a hold counting against its limit waits for the new figures.
      const found = await this.engine
        .lockRows(
          trx.selectFrom('api_keys').select('id').where('id', '=', keyId).where('account_id', '=', accountId),
          'update',
        )
        .executeTakeFirst();
      if (!found) return undefined;
      await applyChanges(trx, keyId, changes, this.engine.now());
      const row = await trx
        .selectFrom('api_keys')
        .selectAll()
        .where('id', '=', keyId)
        .executeTakeFirstOrThrow();
      return toKeyInfo(row);
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
        'api_keys.limit_nano',
        'api_keys.limit_reset',
        'api_keys.expires_at',
        'api_keys.allowed',
        'api_keys.rpm',
        'api_keys.tpm',
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
      controls: controlsOf(row),
    };
  }
}
