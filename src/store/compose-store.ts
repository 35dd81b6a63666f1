import type { DashboardStore } from './dashboard-types.js';
import type {
  Accounts,
  ApiKeys,
  IdempotencyRecords,
  Instances,
  KeyLookup,
  Ledger,
  LedgerReads,
  Store,
  StoreLifecycle,
  TopUpCodes,
} from './types.js';

/** The parts a database's store is made of (`sqlite/store.ts`, `postgres/store.ts`). */
export interface StoreParts extends Omit<StoreLifecycle, 'dashboard'> {
  dashboard(now: (() => number) | undefined): DashboardStore;
  ledger: Ledger;
  reads: LedgerReads;
  accounts: Accounts;
  keys: ApiKeys;
  keyLookup: KeyLookup;
  idempotency: IdempotencyRecords;
  instances: Instances;
  codes: TopUpCodes;
}

/**
 * The `Store` of a database: each method is its part's, as the database built it. It holds no logic of its
 * own, so what a call does is in the part it names.
 */
export function composeStore(parts: StoreParts): Store {
  const { ledger, reads, accounts, keys, keyLookup, idempotency, instances, codes } = parts;
  return {
    dialect: parts.dialect,
    sharedByInstances: parts.sharedByInstances,
    migrate: (target) => parts.migrate(target),
    close: () => parts.close(),
    ping: () => parts.ping(),
    dashboard: (now) => parts.dashboard(now),

    addCredit: (input) => ledger.addCredit(input),
    placeHold: (input) => ledger.placeHold(input),
    settle: (input) => ledger.settle(input),
    release: (input) => ledger.release(input),
    releaseHolds: (filter) => ledger.releaseHolds(filter),
    recordUsage: (usage) => ledger.recordUsage(usage),
    recordRefusal: (refusal) => ledger.recordRefusal(refusal),

    openHoldsNano: (accountId) => reads.openHoldsNano(accountId),
    openHoldsTotal: () => reads.openHoldsTotal(),
    ledgerCheck: (options) => reads.ledgerCheck(options),
    chargesSince: (accountId, since) => reads.chargesSince(accountId, since),
    listUsage: (accountId, options) => reads.listUsage(accountId, options),

    createAccount: (input) => accounts.createAccount(input),
    getAccount: (id) => accounts.getAccount(id),
    findAccountByEmail: (email) => accounts.findAccountByEmail(email),
    spendOf: (accountId, now) => accounts.spendOf(accountId, now),

    createApiKey: (input) => keys.createApiKey(input),
    listApiKeys: (accountId) => keys.listApiKeys(accountId),
    revokeApiKey: (accountId, keyId) => keys.revokeApiKey(accountId, keyId),
    updateApiKey: (accountId, keyId, changes) => keys.updateApiKey(accountId, keyId, changes),
    getApiKey: (accountId, keyId) => keys.getApiKey(accountId, keyId),
    touchApiKey: (keyId, at) => keys.touchApiKey(keyId, at),
    findKeyByHash: (keyHash) => keyLookup.findKeyByHash(keyHash),

    beginIdempotent: (input) => idempotency.beginIdempotent(input),
    abandonIdempotent: (accountId, key, requestId) =>
      idempotency.abandonIdempotent(accountId, key, requestId),
    purgeIdempotency: (now) => idempotency.purgeIdempotency(now),

    markInstanceAlive: (owner, now) => instances.markInstanceAlive(owner, now),
    forgetInstance: (owner) => instances.forgetInstance(owner),
    forgetStaleInstances: (staleBefore) => instances.forgetStaleInstances(staleBefore),

    createCodeBatch: (input) => codes.createCodeBatch(input),
    listCodeBatches: (limit) => codes.listCodeBatches(limit),
    getCodeBatch: (id) => codes.getCodeBatch(id),
    listBatchCodes: (batchId) => codes.listBatchCodes(batchId),
    redeemCode: (input) => codes.redeemCode(input),
  };
}
