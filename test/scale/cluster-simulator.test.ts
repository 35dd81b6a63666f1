import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../../src/auth/keys.js';
import { openStore } from '../../src/store/index.js';
import type { Store } from '../../src/store/types.js';
import { waitForExit } from '../helpers/cli.js';
import { createPostgresSchema, TEST_REDIS_URL, testRedisPrefix } from '../helpers/test-database.js';
import { assertBuilt, CLUSTER_SCRIPT, call, sleep } from './scale-helpers.js';

/**
 * `scripts/cluster.mjs --simulator`: no provider key anywhere in the environment, and every instance
 * serves completions from the local simulator. What is under test is the environment the script gives
 * the instances, not nginx, so nginx is stood in for by a small proxy that reads the generated
 * configuration (its listen address and upstream servers) and passes requests on, round robin.
 */

const FAKE_NGINX = `#!${process.execPath}
import { readFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
const args = process.argv.slice(2);
if (args.includes('-t')) process.exit(0);
const config = readFileSync(args[args.indexOf('-c') + 1], 'utf8');
const port = Number(/listen 127\\.0\\.0\\.1:(\\d+);/.exec(config)[1]);
const upstreams = [...config.matchAll(/server (127\\.0\\.0\\.1:\\d+) max_fails/g)].map((m) => m[1]);
let next = 0;
const server = createServer((req, res) => {
  const [host, upstreamPort] = upstreams[next++ % upstreams.length].split(':');
  const out = request({ host, port: upstreamPort, method: req.method, path: req.url, headers: req.headers }, (answer) => {
    res.writeHead(answer.statusCode, answer.headers);
    answer.pipe(res);
  });
  out.on('error', () => { res.writeHead(502); res.end(); });
  req.pipe(out);
});
server.listen(port, '127.0.0.1');
process.on('SIGQUIT', () => process.exit(0));
`;

let dir: string;
let schema: Awaited<ReturnType<typeof createPostgresSchema>>;
const redis = testRedisPrefix();
let store: Store;
let cluster: ChildProcess | undefined;

beforeAll(async () => {
  assertBuilt();
  dir = mkdtempSync(join(tmpdir(), 'tollgate-cluster-simulator-'));
  writeFileSync(join(dir, 'nginx'), FAKE_NGINX);
  chmodSync(join(dir, 'nginx'), 0o755);
  schema = await createPostgresSchema();
  store = await openStore(schema.url);
  await store.migrate();
}, 60_000);

afterAll(async () => {
  if (cluster && cluster.exitCode === null && cluster.signalCode === null) cluster.kill('SIGKILL');
  await store?.close();
  await schema?.drop();
  await redis.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

describe('node scripts/cluster.mjs --simulator', () => {
  it('every instance serves completions from the local simulator, with no provider key set', async () => {
    const created = await store.createAccount({
      email: 'sim@example.test',
      role: 'user',
      passwordHash: null,
    });
    if (!created.ok) throw new Error('account');
    await store.addCredit({ accountId: created.account.id, amountNano: 1_000_000_000, note: null });
    const key = await createKey(store, created.account.id, 'cluster');
    if (!key.ok) throw new Error('key');

    const child = spawn(
      process.execPath,
      [
        CLUSTER_SCRIPT,
        '--instances',
        '2',
        '--port',
        '0',
        '--simulator',
        '--nginx',
        join(dir, 'nginx'),
        '--dir',
        dir,
      ],
      {
        // No PROV_ variable at all: without --simulator no provider would be active.
        env: {
          PATH: process.env.PATH ?? '',
          DATABASE_URL: schema.url,
          REDIS_URL: TEST_REDIS_URL,
          REDIS_KEY_PREFIX: redis.prefix,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    cluster = child;
    let out = '';
    let err = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr?.on('data', (d: Buffer) => {
      err += d.toString();
    });
    const end = Date.now() + 60_000;
    while (!out.includes('\n')) {
      if (child.exitCode !== null || Date.now() > end)
        throw new Error(`cluster did not start:\n${err}${out}`);
      await sleep(50);
    }
    const ready = JSON.parse(out.slice(0, out.indexOf('\n'))) as {
      url: string;
      instances: { url: string }[];
      simulator: string;
    };
    expect(ready.simulator).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(ready.instances).toHaveLength(2);

    const body = { model: 'auto', max_tokens: 16, messages: [{ role: 'user', content: 'Hello' }] };
    for (const base of [ready.url, ...ready.instances.map((i) => i.url)]) {
      const answer = await call(`${base}/api/v1/chat/completions`, { key: key.secret, body });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect((answer.body.meta as { provider: string }).provider).toMatch(/^prov-/);
    }
    // Every provider of the catalog is active on each instance (the simulator serves them all).
    const ready1 = await call(`${ready.instances[0]?.url}/readyz`);
    expect(ready1.status).toBe(200);

    child.kill('SIGTERM');
    expect(await waitForExit(child)).toBe(0);
  }, 120_000);
});
