import type { Kysely } from 'kysely';
import { type Database, toNumber, toNumberOrNull } from '../schema.js';
import type { HoldsToRelease } from '../types.js';

/** An open hold, as a ledger closes it. */
export interface OpenHold {
  id: string;
  accountId: string;
  amountNano: number;
  /** The key and the window of its limit the hold counts in (migration 0012). */
  keyId: string | null;
  keyWindow: number | null;
}

/**
 * The open holds `filter` picks (see `HoldsToRelease`), for the ledger of either database to release one by
 * one. The picking is shared; the releasing is each ledger's own.
 */
export async function holdsToRelease(db: Kysely<Database>, filter: HoldsToRelease): Promise<OpenHold[]> {
  let query = db.selectFrom('holds').select(['id', 'account_id', 'amount_nano', 'key_id', 'key_window']);
  if (filter.kind === 'expired') {
    query = query.where('expires_at', '<', filter.now);
    if (filter.keep !== undefined && filter.keep.length > 0) query = query.where('id', 'not in', filter.keep);
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
  const rows = await query.execute();
  return rows.map((r) => ({
    id: r.id,
    accountId: r.account_id,
    amountNano: toNumber(r.amount_nano),
    keyId: r.key_id ?? null,
    keyWindow: toNumberOrNull(r.key_window ?? null),
  }));
}
