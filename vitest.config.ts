import { Socket } from 'node:net';
import { configDefaults, defineConfig, type ViteUserConfig } from 'vitest/config';

/**
 * The suite runs as two projects: `sqlite` (everything, on the embedded store) and `postgres` (the core
 * suite again on PostgreSQL + Redis, plus the multi-instance and fault tests of test/scale). Tests read
 * TEST_DATABASE / TEST_REDIS (test/helpers/test-database.ts). `--project sqlite` runs one of them.
 */
const POSTGRES_SUITE = [
  'test/api/**/*.test.ts',
  'test/gateway/**/*.test.ts',
  'test/store/**/*.test.ts',
  'test/resilience/**/*.test.ts',
  'test/cli/cli.test.ts',
  'test/scale/**/*.test.ts',
  'test/dashboard/**/*.test.ts',
];
/** Process-level tests of the embedded store (one server process on one SQLite file). */
const SQLITE_ONLY = [
  'test/resilience/{crash,sigterm,overload,slow-clients,health-under-attack}.test.ts',
  // SQLite's query plans of the dashboard's usage queries; the CLI on its default store.
  'test/dashboard/{usage-indexes,cli-accounts}.test.ts',
  // Group commit, the background WAL checkpointer and the reports' reader thread of the SQLite engine.
  'test/store/{sqlite-engine,sqlite-reader}.test.ts',
];

const postgresUrl = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Whether something answers on the URL's host and port (Redis: with PONG). */
function reachable(url: string, defaultPort: number, ping?: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = new Socket();
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_500, () => done(false));
    socket.once('error', () => done(false));
    socket.connect(Number(port || defaultPort), hostname || '127.0.0.1', () => {
      if (!ping) return done(true);
      socket.once('data', (data) => done(data.toString().startsWith('+PONG')));
      socket.write(ping);
    });
  });
}

export default defineConfig(async (): Promise<ViteUserConfig> => {
  const [postgres, redis] = await Promise.all([
    reachable(postgresUrl, 5432),
    reachable(redisUrl, 6379, 'PING\r\n'),
  ]);
  const missing = [
    ...(postgres ? [] : [`PostgreSQL at ${new URL(postgresUrl).host} (TEST_POSTGRES_URL)`]),
    ...(redis ? [] : [`Redis at ${new URL(redisUrl).host} (TEST_REDIS_URL)`]),
  ];
  if (missing.length > 0) {
    const message =
      `Not reachable: ${missing.join(' and ')}. The postgres project (the core suite on PostgreSQL + ` +
      'Redis, and test/scale) needs PostgreSQL 15 and Redis 7; see docs/deployment.md, "Running the tests".';
    // In CI a missing service is a failure, never a silent skip.
    if (process.env.CI === 'true') throw new Error(message);
    process.env.TOLLGATE_TESTS_NOT_RUN = `postgres project NOT RUN — ${message}`;
    console.warn(`\n*** ${process.env.TOLLGATE_TESTS_NOT_RUN}\n`);
  }
  return {
    test: {
      testTimeout: 30_000,
      hookTimeout: 60_000,
      pool: 'forks',
      projects: [
        {
          extends: true,
          test: {
            name: 'sqlite',
            include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
            exclude: [...configDefaults.exclude, 'test/scale/**'],
          },
        },
        ...(missing.length === 0
          ? [
              {
                extends: true as const,
                test: {
                  name: 'postgres',
                  include: POSTGRES_SUITE,
                  exclude: [...configDefaults.exclude, ...SQLITE_ONLY],
                  env: { TEST_DATABASE: 'postgres', TEST_REDIS: '1' },
                },
              },
            ]
          : []),
      ],
    },
  };
});
