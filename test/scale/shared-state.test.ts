import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-key.js';
import { createKey } from '../../src/auth/keys.js';
import { ACCOUNT_FAILURES } from '../../src/auth/login-throttle.js';
import { RedisLink } from '../../src/cluster/redis-link.js';
import { SharedRateLimit } from '../../src/cluster/shared-rate-limit.js';
import { loadConfig } from '../../src/config/index.js';
import { createServer, type Server } from '../../src/http/server.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { openStore } from '../../src/store/index.js';
import type { Store } from '../../src/store/types.js';
import { createPostgresSchema, TEST_REDIS_URL, testRedisPrefix } from '../helpers/test-database.js';
import { freePort, providerEnv, sleep } from './scale-helpers.js';

/**
 * Two gateway instances in this process, on one PostgreSQL schema and one Redis key prefix: what one
 * instance learns reaches the other over Redis (revocations, account changes, circuit openings, the
 * rotation counter, the requests-per-minute bucket); and an instance whose Redis is unreachable starts
 * and serves with its own state, without waiting on Redis.
 */

const AUTO = ['prov-deepseek', 'prov-qwen', 'prov-kimi', 'prov-gpt-oss-120b'];

let sim: Simulator;
let schema: Awaited<ReturnType<typeof createPostgresSchema>>;
const redis = testRedisPrefix();
let store: Store;
const servers: Server[] = [];

async function instance(extra: Record<string, string> = {}): Promise<Server> {
  const config = loadConfig({
    DATABASE_URL: schema.url,
    REDIS_URL: TEST_REDIS_URL,
    REDIS_KEY_PREFIX: redis.prefix,
    PORT: '0',
    HOST: '127.0.0.1',
    KEY_CACHE_TTL_MS: '1000',
    CIRCUIT_MIN_REQUESTS: '2',
    CIRCUIT_COOLDOWN_MS: '30000',
    ...providerEnv(sim),
    ...extra,
  });
  const server = await createServer(config, { logger: pino({ level: 'silent' }) });
  servers.push(server);
  return server;
}

async function account(creditNano = 1_000_000_000) {
  const created = await store.createAccount({
    email: `shared-${Math.random().toString(36).slice(2)}@example.test`,
    role: 'user',
    passwordHash: null,
  });
  if (!created.ok) throw new Error('account');
  await store.addCredit({ accountId: created.account.id, amountNano: creditNano, note: null });
  const key = await createKey(store, created.account.id, 'shared');
  if (!key.ok) throw new Error('key');
  return { accountId: created.account.id, key: key.secret, keyId: key.key.id };
}

async function chat(server: Server, key: string, body: Record<string, unknown> = {}) {
  const res = await server.app.inject({
    method: 'POST',
    url: '/api/v1/chat/completions',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    payload: JSON.stringify({ messages: [{ role: 'user', content: 'Hello there' }], ...body }),
  });
  return { status: res.statusCode, body: res.json() as Record<string, unknown> };
}

async function keyStatus(server: Server, key: string): Promise<number> {
  const res = await server.app.inject({
    method: 'GET',
    url: '/api/v1/key',
    headers: { authorization: `Bearer ${key}` },
  });
  return res.statusCode;
}

/** Milliseconds until `server` refuses `key` (polling every 5 ms), or Infinity after `limitMs`. */
async function refusedAfter(server: Server, key: string, limitMs = 3_000): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < limitMs) {
    if ((await keyStatus(server, key)) === 401) return Date.now() - started;
    await sleep(5);
  }
  return Number.POSITIVE_INFINITY;
}

beforeAll(async () => {
  sim = await startSimulator({ host: '127.0.0.1', port: 0 });
  schema = await createPostgresSchema();
  store = await openStore(schema.url);
  await store.migrate();
});

afterAll(async () => {
  for (const s of servers) await s.close();
  await store?.close();
  await sim?.close();
  await schema?.drop();
  await redis.cleanup();
});

describe('two instances sharing state over Redis', () => {
  let a: Server;
  let b: Server;
  beforeAll(async () => {
    a = await instance();
    b = await instance();
  });

  it('a key revoked on one instance is refused by the other at once, well inside its 1 s cache', async () => {
    for (const revoke of ['by hash (the dashboard)', 'by id'] as const) {
      const user = await account();
      expect(await keyStatus(b, user.key)).toBe(200); // cached on b for the next second
      expect(await store.revokeApiKey(user.accountId, user.keyId)).toBe('revoked');
      if (revoke === 'by id') a.authenticator.keyRevoked(user.keyId);
      else a.authenticator.forget(hashApiKey(user.key));
      const ms = await refusedAfter(b, user.key);
      console.log(`[shared] key revoked ${revoke} on one instance: refused by the other after ${ms} ms`);
      expect(ms).toBeLessThan(500);
    }
  });

  it('an account disabled on one instance has its keys dropped on the other at once', async () => {
    const user = await account();
    expect(await keyStatus(b, user.key)).toBe(200);
    await schemaQuery("update accounts set status = 'disabled' where id = $1", [user.accountId]);
    a.authenticator.forgetAccount(user.accountId);
    expect(await refusedAfter(b, user.key)).toBeLessThan(500);
  });

  it('a circuit opened on one instance keeps the other off that provider too', async () => {
    const user = await account();
    sim.setFault('mistral', { kind: 'status', status: 500 });
    for (let i = 0; i < 2; i++)
      expect((await chat(a, user.key, { provider: 'prov-mistral' })).status).toBe(502);
    expect(a.registry.status('prov-mistral').circuit).toBe('open');
    const end = Date.now() + 2_000;
    while (b.registry.status('prov-mistral').circuit !== 'open' && Date.now() < end) await sleep(5);
    expect(b.registry.status('prov-mistral').circuit).toBe('open');
    const upstreamCalls = sim.requests('mistral').length;
    const refused = await chat(b, user.key, { provider: 'prov-mistral' });
    expect(refused.status).toBe(503);
    expect((refused.body.error as { code: string }).code).toBe('provider_unavailable');
    expect(sim.requests('mistral').length).toBe(upstreamCalls);
    sim.setFault('mistral', null);
  });

  it('auto rotation is one sequence over both instances', async () => {
    const user = await account();
    const seen: string[] = [];
    for (let i = 0; i < 8; i++) {
      const answer = await chat(i % 2 === 0 ? a : b, user.key);
      expect(answer.status).toBe(200);
      seen.push((answer.body.meta as { provider: string }).provider);
    }
    const start = AUTO.indexOf(seen[0] as string);
    expect(seen).toEqual(seen.map((_, i) => AUTO[(start + i) % AUTO.length]));
  });
});

describe('the login throttle is counted across instances', () => {
  it('five wrong passwords spread over two instances lock the account on both; Redis holds no email', async () => {
    const [a, b] = [await instance(), await instance()];
    const email = `throttle-${Math.random().toString(36).slice(2)}@example.test`;
    const created = await store.createAccount({ email, role: 'user', passwordHash: null });
    if (!created.ok) throw new Error('account');
    const login = async (server: Server) =>
      (
        await server.app.inject({
          method: 'POST',
          url: '/dashboard/api/auth/login',
          headers: { 'content-type': 'application/json' },
          payload: JSON.stringify({ email, password: 'not the password' }),
        })
      ).statusCode;
    const statuses: number[] = [];
    for (let i = 0; i < ACCOUNT_FAILURES; i++) statuses.push(await login(i % 2 === 0 ? a : b));
    expect(statuses).toEqual(Array(ACCOUNT_FAILURES).fill(401));
    expect(await login(a)).toBe(429);
    expect(await login(b)).toBe(429);
    const keys = await redis.keys('attempts:*');
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.some((k) => k.includes('@') || k.includes('127.0.0.1'))).toBe(false);
  });
});

describe('the requests-per-minute limit is counted across instances', () => {
  it('KEY_RATE_LIMIT_RPM=4: two requests on each instance, then 429 on either', async () => {
    const a = await instance({ KEY_RATE_LIMIT_RPM: '4' });
    const b = await instance({ KEY_RATE_LIMIT_RPM: '4' });
    const user = await account();
    for (const server of [a, b, a, b]) expect((await chat(server, user.key)).status).toBe(200);
    for (const server of [a, b]) {
      const limited = await chat(server, user.key);
      expect(limited.status).toBe(429);
      expect((limited.body.error as { code: string }).code).toBe('rate_limit_exceeded');
    }
  });
});

describe("a key's own RPM and TPM in Redis (one script call)", () => {
  it('the window of settled tokens, its Retry-After, and a refusal that draws from no bucket', async () => {
    const link = new RedisLink({
      url: TEST_REDIS_URL,
      timeoutMs: 2_000,
      logger: pino({ level: 'silent' }),
      name: 'unit',
    });
    try {
      expect(await link.ready(2_000)).toBe(true);
      const limits = new SharedRateLimit(link, `${redis.prefix}rate:`);
      const tokensKey = `${redis.prefix}rate:tokens:key_t`;
      const [seconds] = (await link.client.time()) as [string | number, string | number];
      const now = Number(seconds);
      // Settled 60 s ago (out of the window, dropped), 50 s ago and 10 s ago.
      await link.client.hset(
        tokensKey,
        String(now - 60),
        '1000',
        String(now - 50),
        '60',
        String(now - 10),
        '50',
      );
      const refused = await limits.take('key_t', 0, { rpm: 0, tpm: 100 });
      expect(refused).toMatchObject({ allowed: false, refusedBy: 'key_tpm', settledTokens: 110 });
      // Under 100 once the 60 of 50 s ago leave the window: in about 10 s (Redis counts in whole seconds).
      expect(refused?.retryAfterMs).toBeGreaterThan(8_000);
      expect(refused?.retryAfterMs).toBeLessThanOrEqual(10_000);
      expect(await link.client.hexists(tokensKey, String(now - 60))).toBe(0);
      // Admitted under a limit above the count; a settle adds to the count.
      expect(await limits.take('key_t', 0, { rpm: 0, tpm: 111 })).toMatchObject({
        allowed: true,
        settledTokens: 110,
      });
      limits.addTokens('key_t', 5);
      expect(await limits.take('key_t', 0, { rpm: 0, tpm: 200 })).toMatchObject({ settledTokens: 115 });

      // KEY_RATE_LIMIT_RPM 3 and the key's own 2: the own one refuses the third, taking nothing from
      // the global bucket, which then still admits one more without the key's own limit.
      expect((await limits.take('key_r', 3, { rpm: 2, tpm: 0 }))?.allowed).toBe(true);
      expect((await limits.take('key_r', 3, { rpm: 2, tpm: 0 }))?.allowed).toBe(true);
      for (let i = 0; i < 3; i++) {
        const own = await limits.take('key_r', 3, { rpm: 2, tpm: 0 });
        expect(own).toMatchObject({ allowed: false, refusedBy: 'key_rpm' });
        expect(own?.retryAfterMs).toBeGreaterThan(25_000);
      }
      expect((await limits.take('key_r', 3))?.allowed).toBe(true);
      expect(await limits.take('key_r', 3)).toMatchObject({ allowed: false, refusedBy: 'rpm' });
    } finally {
      await link.close();
    }
  });
});

describe('without a reachable Redis', () => {
  it('an instance starts, serves with its own state and never waits on Redis', async () => {
    const started = Date.now();
    const lonely = await instance({
      REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
      REDIS_TIMEOUT_MS: '50',
    });
    expect(Date.now() - started).toBeLessThan(5_000);
    const user = await account();
    const providers: string[] = [];
    const times: number[] = [];
    for (let i = 0; i < 8; i++) {
      const t = Date.now();
      const answer = await chat(lonely, user.key);
      times.push(Date.now() - t);
      expect(answer.status).toBe(200);
      providers.push((answer.body.meta as { provider: string }).provider);
    }
    // Its own counter still rotates evenly.
    for (const p of AUTO) expect(providers.filter((x) => x === p)).toHaveLength(2);
    console.log(`[shared] Redis unreachable: 8 requests in ${times.join(', ')} ms`);
    const ready = await lonely.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toMatchObject({ database: 'ok', redis: 'unavailable' });
  });
});

async function schemaQuery(sqlText: string, params: unknown[]): Promise<void> {
  const client = new pg.Client({ connectionString: schema.url });
  await client.connect();
  try {
    await client.query(sqlText, params);
  } finally {
    await client.end();
  }
}
