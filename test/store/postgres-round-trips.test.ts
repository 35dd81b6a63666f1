/**
 * What one chat completion costs the PostgreSQL store and Redis, in statements sent (docs/performance.md,
 * "PostgreSQL: prepared statements, and one statement per account"): a lone call sends one to hold and
 * one to settle (usage row included), and at most one command to Redis (the rotation under auto routing). Counted at the drivers' `query` and
 * `sendCommand`, so a round trip added anywhere on the hot path fails it.
 */
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, hello, startHarness } from '../helpers/harness.js';
import { TEST_DIALECT } from '../helpers/test-database.js';

let h: Harness;
const sent = { pg: 0, redis: 0 };
const pgQuery = pg.Client.prototype.query;
const redisSend = Redis.prototype.sendCommand;

describe.runIf(TEST_DIALECT === 'postgres')('round trips per call on PostgreSQL', () => {
  beforeAll(async () => {
    h = await startHarness();
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      sent.pg += 1;
      return (pgQuery as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof pgQuery;
    Redis.prototype.sendCommand = function (this: Redis, ...args: unknown[]) {
      sent.redis += 1;
      return (redisSend as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof redisSend;
    // The key's lookup and the first statements' preparation are once per process, not per call.
    for (let i = 0; i < 3; i++) expect((await h.chat(hello)).status).toBe(200);
  });
  afterAll(async () => {
    pg.Client.prototype.query = pgQuery;
    Redis.prototype.sendCommand = redisSend;
    await h?.close();
  });

  async function count(calls: number, concurrent: boolean): Promise<{ pg: number; redis: number }> {
    sent.pg = 0;
    sent.redis = 0;
    const one = async () => expect((await h.chat(hello)).status).toBe(200);
    if (concurrent) await Promise.all(Array.from({ length: calls }, one));
    else for (let i = 0; i < calls; i++) await one();
    return { pg: sent.pg / calls, redis: sent.redis / calls };
  }

  it('a lone call: one statement to hold, one to settle', async () => {
    const perCall = await count(20, false);
    // Two, and now and then the key's cache refreshed or its last use written.
    expect(perCall.pg).toBeLessThan(2.5);
    expect(perCall.redis).toBeLessThanOrEqual(1);
  });

  it('concurrent calls of one account never send more than a lone call', async () => {
    // How many share a statement depends on how they arrive: at most the lone call's two.
    const perCall = await count(50, true);
    expect(perCall.pg).toBeLessThan(2.5);
    expect(perCall.redis).toBeLessThanOrEqual(1);
  });
});
