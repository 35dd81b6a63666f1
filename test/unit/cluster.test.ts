import { createServer } from 'node:net';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { parseEnvelope } from '../../src/cluster/change-bus.js';
import { connectCluster } from '../../src/cluster/index.js';
import { RedisLink } from '../../src/cluster/redis-link.js';
import { redactUrlPassword } from '../../src/redact-url.js';

const silent = pino({ level: 'silent' });

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

describe('announcements between instances', () => {
  it('well-formed events are read; anything else is ignored', () => {
    const env = (event: unknown) => JSON.stringify({ from: 'inst_a', event });
    expect(parseEnvelope(env({ kind: 'key_revoked', keyId: 'key_1' }))).toEqual({
      from: 'inst_a',
      event: { kind: 'key_revoked', keyId: 'key_1' },
    });
    expect(parseEnvelope(env({ kind: 'key_revoked', keyHash: 'a'.repeat(64) }))?.event).toEqual({
      kind: 'key_revoked',
      keyHash: 'a'.repeat(64),
    });
    expect(parseEnvelope(env({ kind: 'account_changed', accountId: 'acct_1' }))?.event.kind).toBe(
      'account_changed',
    );
    expect(parseEnvelope(env({ kind: 'circuit_opened', provider: 'prov-qwen', forMs: 1500 }))?.event).toEqual(
      { kind: 'circuit_opened', provider: 'prov-qwen', forMs: 1500 },
    );
    for (const bad of [
      'not json',
      'null',
      JSON.stringify({ event: { kind: 'key_revoked', keyId: 'k' } }),
      env({ kind: 'key_revoked' }),
      env({ kind: 'key_revoked', keyHash: 'short' }),
      env({ kind: 'circuit_opened', provider: 'prov-qwen', forMs: -1 }),
      env({ kind: 'circuit_opened', provider: 'prov-qwen', forMs: 'soon' }),
      env({ kind: 'drop_tables' }),
    ]) {
      expect(parseEnvelope(bad)).toBeUndefined();
    }
  });

  it('Redis URLs are logged without their password', () => {
    expect(redactUrlPassword('redis://:hunter2@cache:6379/0')).toBe('redis://:***@cache:6379/0');
    expect(redactUrlPassword('rediss://app:hunter2@cache')).toBe('rediss://app:***@cache');
    expect(redactUrlPassword('redis://cache:6379')).toBe('redis://cache:6379');
  });
});

describe('with Redis unreachable', () => {
  it('commands answer undefined at once instead of waiting', async () => {
    const link = new RedisLink({
      url: `redis://127.0.0.1:${await freePort()}`,
      timeoutMs: 50,
      logger: silent,
      name: 'unit',
    });
    try {
      const started = Date.now();
      for (let i = 0; i < 100; i++) expect(await link.run((r) => r.incr('x'))).toBeUndefined();
      // Waiting for the connection, each would take its 50 ms timeout: 5 s for the hundred. At once, the
      // hundred take less than a tenth of that even on a busy machine.
      expect(Date.now() - started).toBeLessThan((100 * 50) / 10);
      expect(link.usable()).toBe(false);
    } finally {
      await link.close();
    }
  });

  it('a cluster starts within its wait and falls back to local state', async () => {
    const started = Date.now();
    const cluster = await connectCluster({
      config: {
        redisUrl: `redis://127.0.0.1:${await freePort()}`,
        redisKeyPrefix: 'unit:',
        redisTimeoutMs: 50,
      },
      instanceId: 'inst_unit',
      logger: silent,
      onEvent: () => {},
      onResync: () => {},
      connectWaitMs: 300,
    });
    try {
      expect(Date.now() - started).toBeLessThan(1_500);
      expect(cluster.status()).toBe('unavailable');
      expect([await cluster.rotation.next(), await cluster.rotation.next()]).toEqual([0, 1]);
      expect(await cluster.rateLimit?.take('key_1', 60)).toBeUndefined();
      cluster.publish({ kind: 'key_revoked', keyId: 'key_1' }); // dropped, never throws
    } finally {
      await cluster.close();
    }
  });
});
