import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../../src/auth/keys.js';
import { hashPassword } from '../../src/auth/passwords.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { openStore } from '../../src/store/index.js';
import type { Store } from '../../src/store/types.js';
import { havePrograms, NGINX } from '../helpers/system-programs.js';
import { createPostgresSchema, TEST_REDIS_URL, testRedisPrefix } from '../helpers/test-database.js';
import {
  type Answer,
  assertBuilt,
  call,
  errorCode,
  ledgerCheck,
  logLines,
  percentile,
  pollUntilRefused,
  providerEnv,
  type RunningCluster,
  revocationTimes,
  sleep,
  startCluster,
} from './scale-helpers.js';

/**
 * Three stateless instances behind nginx (scripts/cluster.mjs, as in docs/deployment.md), sharing one
 * PostgreSQL database and one Redis: no overspend under a concurrent burst, revocation reaching every
 * instance within a second, and one auto-rotation sequence across the instances.
 */

const canRun = havePrograms('the instances behind nginx', NGINX);

const INSTANCES = 3;
/** Calls the payer's balance covers. */
const N = 50;
const AUTO = ['prov-deepseek', 'prov-qwen', 'prov-kimi', 'prov-gpt-oss-120b'];

let sim: Simulator;
let schema: Awaited<ReturnType<typeof createPostgresSchema>>;
const redis = testRedisPrefix();
let env: Record<string, string>;
let store: Store;
let cluster: RunningCluster;

beforeAll(async () => {
  assertBuilt();
  sim = await startSimulator({ host: '127.0.0.1', port: 0, latencyMs: 20 });
  schema = await createPostgresSchema();
  env = {
    DATABASE_URL: schema.url,
    REDIS_URL: TEST_REDIS_URL,
    REDIS_KEY_PREFIX: redis.prefix,
    LOG_LEVEL: 'info',
    ...providerEnv(sim),
    // Input is free and every completion is cut at its 16-token cap: every call below costs the same,
    // and its hold is exactly its cost.
    PROV_DEEPSEEK_INPUT_PRICE: '0',
    PROV_DEEPSEEK_OUTPUT_PRICE: '1',
  };
  store = await openStore(schema.url);
  await store.migrate();
  cluster = await startCluster(INSTANCES, env);
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
  await store?.close();
  await sim?.close();
  await schema?.drop();
  await redis.cleanup();
});

const PASSWORD = 'correct horse battery staple';

async function account(creditNano: number, options: { password?: boolean } = {}) {
  const email = `scale-${Math.random().toString(36).slice(2)}@example.test`;
  const passwordHash = options.password ? await hashPassword(PASSWORD) : null;
  const created = await store.createAccount({ email, role: 'user', passwordHash });
  if (!created.ok) throw new Error('account');
  if (creditNano > 0)
    await store.addCredit({ accountId: created.account.id, amountNano: creditNano, note: null });
  const key = await createKey(store, created.account.id, 'scale');
  if (!key.ok) throw new Error('key');
  return { accountId: created.account.id, email, key: key.secret, keyId: key.key.id };
}

/** Completion requests each instance logged so far. */
function completionsPerInstance(): number[] {
  return cluster.instances.map(
    (i) => logLines(i).filter((l) => l.msg === 'request done' && l.url === '/api/v1/chat/completions').length,
  );
}

const fixedCall = {
  provider: 'prov-deepseek',
  max_tokens: 16,
  messages: [{ role: 'user', content: 'Hello there' }],
};

describe.skipIf(!canRun)('three instances behind nginx sharing PostgreSQL and Redis', () => {
  it(`${10 * N} concurrent calls against a balance that covers ${N}: at most ${N} served, never below zero, ledger clean`, async () => {
    const completions = `${cluster.url}/api/v1/chat/completions`;
    const probe = await account(1_000_000_000);
    expect((await call(completions, { key: probe.key, body: fixedCall })).status).toBe(200);
    const [probeUsage] = await store.listUsage(probe.accountId, { limit: 1 });
    const cost = (probeUsage?.inputCostNano ?? 0) + (probeUsage?.outputCostNano ?? 0);
    expect(cost).toBeGreaterThan(0);

    const payer = await account(N * cost);
    const before = completionsPerInstance();
    let minBalance = Number.POSITIVE_INFINITY;
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        minBalance = Math.min(minBalance, (await store.getAccount(payer.accountId))?.balanceNano ?? 0);
        await sleep(5);
      }
    })();
    const started = Date.now();
    const answers = await Promise.all(
      Array.from({ length: 10 * N }, () => call(completions, { key: payer.key, body: fixedCall })),
    );
    const wallMs = Date.now() - started;
    watching = false;
    await watcher;
    const after = completionsPerInstance();
    const perInstance = after.map((n, i) => n - (before[i] ?? 0));

    const served = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 402 && errorCode(a) === 'insufficient_balance');
    const other = answers.filter((a) => a.status !== 200 && a.status !== 402);
    const balance = (await store.getAccount(payer.accountId))?.balanceNano;
    console.log(
      `[scale] ${10 * N} concurrent calls over ${INSTANCES} instances (${perInstance.join(' / ')}), balance for ${N}: ` +
        `${served.length} served, ${refused.length} refused 402, ${other.length} other; ` +
        `min balance seen ${minBalance}, final ${balance}; wall ${wallMs} ms, p50 ${percentile(
          answers.map((a) => a.ms),
          50,
        )} ms, ` +
        `p99 ${percentile(
          answers.map((a) => a.ms),
          99,
        )} ms`,
    );
    expect(other.map((a) => `${a.status} ${errorCode(a)}`)).toEqual([]);
    expect(served.length).toBeLessThanOrEqual(N);
    // Each hold is exactly a call's cost, so the balance is used up to the last call.
    expect(served.length).toBe(N);
    expect(minBalance).toBeGreaterThanOrEqual(0);
    expect(balance).toBe(N * cost - served.length * cost);

    // Every answered call was charged exactly once, and nothing else was.
    const charges = await store.chargesSince(payer.accountId, [0]);
    expect(charges).toEqual([served.length * cost]);
    const usage = await store.listUsage(payer.accountId, { limit: 10 * N });
    const ok = new Set(usage.filter((u) => u.status === 'ok').map((u) => u.requestId));
    expect(ok.size).toBe(served.length);
    for (const a of served) expect(ok.has(a.body.id as string)).toBe(true);
    expect(await store.openHoldsNano(payer.accountId)).toBe(0);

    const checked = ledgerCheck(env);
    expect(checked.code).toBe(0);
    expect(checked.report.ok).toBe(true);

    // nginx spread the burst over every instance.
    for (const n of perInstance) expect(n).toBeGreaterThan((10 * N) / INSTANCES / 2);
  }, 120_000);

  it('a key revoked through one instance (its dashboard) is refused by the others within 1 s', async () => {
    const holder = await account(1_000_000_000, { password: true });
    // Every instance has the key in its cache.
    for (const i of cluster.instances) {
      expect((await call(`${i.url}/api/v1/key`, { key: holder.key })).status).toBe(200);
    }
    const { polls, done: polled } = pollUntilRefused(cluster.instances, holder.key, 8_000);
    await sleep(200);
    // The user revokes the key in the dashboard, served by the first instance.
    const first = cluster.instances[0]?.url as string;
    const login = await request(`${first}/dashboard/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: holder.email, password: PASSWORD }),
    });
    const session = (await login.body.json()) as { csrf_token: string };
    expect(login.statusCode).toBe(200);
    const setCookie = login.headers['set-cookie'];
    const cookie = (Array.isArray(setCookie) ? setCookie[0] : setCookie)?.split(';')[0] ?? '';
    const revoke = await request(`${first}/dashboard/api/keys/${holder.keyId}`, {
      method: 'DELETE',
      headers: { cookie, 'x-csrf-token': session.csrf_token },
    });
    await revoke.body.dump();
    expect(revoke.statusCode).toBe(200);
    await polled;
    const revokedAt = (await store.getApiKey(holder.accountId, holder.keyId))?.revokedAt;
    if (revokedAt === null || revokedAt === undefined) throw new Error('not revoked');

    const figures = revocationTimes(polls, revokedAt);
    figures.forEach((f, n) => {
      expect(f.refused, `instance ${n + 1} never refused the revoked key`).toBeDefined();
      expect(errorCode(f.refused as Answer)).toBe('invalid_api_key');
    });
    console.log(
      `[scale] revocation through instance 1: ${figures.map((f, n) => `instance ${n + 1} refused within ${f.refusedWithinMs} ms (last accepted request sent ${f.lastAcceptedMs} ms after)`).join('; ')}`,
    );
    for (const f of figures) {
      expect(f.lastAcceptedMs).toBeLessThan(1_000);
      expect(f.refusedWithinMs).toBeLessThan(1_000);
    }
  }, 60_000);

  it('auto rotation is one sequence across instances: each auto provider within ±10% over 400 calls', async () => {
    const user = await account(1_000_000_000_000);
    const completions = `${cluster.url}/api/v1/chat/completions`;
    const hello = { messages: [{ role: 'user', content: 'Rotate, please' }] };

    // One at a time through nginx (which sends each to the next instance): consecutive providers.
    const sequence: string[] = [];
    for (let i = 0; i < 12; i++) {
      const answer = await call(completions, { key: user.key, body: hello });
      expect(answer.status).toBe(200);
      sequence.push((answer.body.meta as { provider: string }).provider);
    }
    const start = AUTO.indexOf(sequence[0] as string);
    expect(sequence).toEqual(sequence.map((_, i) => AUTO[(start + i) % AUTO.length]));

    // 400 more, 8 at a time.
    const counts = new Map<string, number>();
    let next = 0;
    const workers = Array.from({ length: 8 }, async () => {
      while (next < 400) {
        next += 1;
        const answer = await call(completions, { key: user.key, body: hello });
        expect(answer.status).toBe(200);
        const provider = (answer.body.meta as { provider: string }).provider;
        counts.set(provider, (counts.get(provider) ?? 0) + 1);
      }
    });
    await Promise.all(workers);
    console.log(
      `[scale] auto rotation over 400 calls: ${AUTO.map((p) => `${p} ${counts.get(p) ?? 0}`).join(', ')}`,
    );
    expect([...counts.keys()].sort()).toEqual([...AUTO].sort());
    for (const p of AUTO) {
      expect(counts.get(p)).toBeGreaterThanOrEqual(90);
      expect(counts.get(p)).toBeLessThanOrEqual(110);
    }
  }, 120_000);
});
