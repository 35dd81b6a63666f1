import { AccountQueries } from './accounts.js';
import { ApiKeyQueries } from './api-keys.js';
import type { SqlEngine } from './engine.js';
import { IdempotencyQueries } from './idempotency.js';
import { InstanceQueries } from './instances.js';
import { LedgerReadQueries } from './ledger-reads.js';
import { TopUpCodeQueries } from './topup-codes.js';

/** The parts of a store that both databases run as the same queries (see `compose-store.ts`). */
export function coldParts(engine: SqlEngine) {
  return {
    reads: new LedgerReadQueries(engine),
    accounts: new AccountQueries(engine),
    keys: new ApiKeyQueries(engine),
    idempotency: new IdempotencyQueries(engine),
    instances: new InstanceQueries(engine),
    codes: new TopUpCodeQueries(engine),
  };
}
