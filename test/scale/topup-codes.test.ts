import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CODE_FAILURES_PER_ACCOUNT } from '../../src/auth/code-redemption.js';
import { createKey } from '../../src/auth/keys.js';
import { createTopUpBatch, generateTopUpCode } from '../../src/auth/topup-code.js';
import { loadConfig } from '../../src/config/index.js';
import { createServer, type Server } from '../../src/http/server.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { openStore } from '../../src/store/index.js';
import type { Store } from '../../src/store/types.js';
import { createPostgresSchema, TEST_REDIS_URL, testRedisPrefix } from '../helpers/test-database.js';
import { assertBuilt, call, errorCode, ledgerCheck, providerEnv } from './scale-helpers.js';

/**
 * Top-up codes on two gateway instances over one PostgreSQL schema and one Redis: a code credits once
 * however many redemptions race on both, and the failed-attempt windows are the instances' together.
 */

let sim: Simulator;
let schema: Awaited<ReturnType<typeof createPostgresSchema>>;
const redis = testRedisPrefix();
let store: Store;
const servers: Server[] = [];
const urls: string[] = [];

async function instance(): Promise<void> {
  const config = loadConfig({
    DATABASE_URL: schema.url,
    REDIS_URL: TEST_REDIS_URL,
    REDIS_KEY_PREFIX: redis.prefix,
    PORT: '0',
    HOST: '127.0.0.1',
    ...providerEnv(sim),
  });
  const server = await createServer(config, { logger: pino({ level: 'silent' }) });
  servers.push(server);
  urls.push(await server.listen());
}

async function account(): Promise<{ accountId: string; key: string }> {
  const created = await store.createAccount({
    email: `code-${Math.random().toString(36).slice(2)}@example.test`,
    role: 'user',
    passwordHash: null,
  });
  if (!created.ok) throw new Error('account');
  const key = await createKey(store, created.account.id, 'codes');
  if (!key.ok) throw new Error('key');
  return { accountId: created.account.id, key: key.secret };
}

const redeem = (n: number, key: string, code: unknown) =>
  call(`${urls[n % urls.length]}/api/v1/credits/redeem`, { key, body: { code } });

beforeAll(async () => {
  assertBuilt();
  sim = await startSimulator({ host: '127.0.0.1', port: 0 });
  schema = await createPostgresSchema();
  store = await openStore(schema.url);
  await store.migrate();
  await instance();
  await instance();
});

afterAll(async () => {
  for (const s of servers) await s.close();
  await store?.close();
  await sim?.close();
  await schema?.drop();
  await redis.cleanup();
});

describe('top-up codes across two instances', () => {
  it('50 concurrent redemptions of one code across 2 instances: exactly one credit, ledger check clean', async () => {
    for (let round = 0; round < 3; round++) {
      const users = await Promise.all(Array.from({ length: 50 }, account));
      const { batch, codes } = await createTopUpBatch(store, {
        amountNano: 3_000_000_000,
        count: 1,
        expiresAt: null,
        note: `race ${round}`,
        createdBy: null,
      });
      const answers = await Promise.all(users.map((u, n) => redeem(n, u.key, codes[0])));
      const won = answers.filter((a) => a.status === 200);
      expect(won).toHaveLength(1);
      expect(won[0]?.body).toMatchObject({ object: 'credit', amount: 3, balance: 3, batch_id: batch.id });
      expect(answers.filter((a) => a.status === 400 && errorCode(a) === 'invalid_code')).toHaveLength(49);
      const balances = await Promise.all(
        users.map(async (u) => (await store.getAccount(u.accountId))?.balanceNano),
      );
      expect(balances.filter((n) => n === 3_000_000_000)).toHaveLength(1);
      expect(balances.filter((n) => n === 0)).toHaveLength(49);
      expect((await store.getCodeBatch(batch.id))?.redeemed).toBe(1);
    }
    const check = ledgerCheck({ DATABASE_URL: schema.url, LOG_LEVEL: 'silent' });
    expect(check.code).toBe(0);
    expect(check.report.ok).toBe(true);
  });

  it('one account racing itself on both instances: one credit, and the throttle admits no more than its limit', async () => {
    const user = await account();
    const { codes } = await createTopUpBatch(store, {
      amountNano: 1_000_000_000,
      count: 1,
      expiresAt: null,
      note: null,
      createdBy: null,
    });
    const answers = await Promise.all(Array.from({ length: 50 }, (_, n) => redeem(n, user.key, codes[0])));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect((await store.getAccount(user.accountId))?.balanceNano).toBe(1_000_000_000);
    const other = answers.filter((a) => a.status !== 200);
    expect(other.every((a) => ['invalid_code', 'too_many_attempts'].includes(errorCode(a) ?? ''))).toBe(true);
  });

  it('failed tries count on both instances together (Redis): the limit holds for the pair', async () => {
    const user = await account();
    const answers = [];
    for (let n = 0; n < CODE_FAILURES_PER_ACCOUNT * 2; n++)
      answers.push(await redeem(n, user.key, generateTopUpCode()));
    expect(answers.filter((a) => errorCode(a) === 'invalid_code')).toHaveLength(CODE_FAILURES_PER_ACCOUNT);
    const refused = answers.filter((a) => a.status === 429);
    expect(refused).toHaveLength(CODE_FAILURES_PER_ACCOUNT);
    expect(refused.every((a) => errorCode(a) === 'too_many_attempts')).toBe(true);
  });
});
