import { randomBytes } from 'node:crypto';
import { createKey } from '../../auth/keys.js';
import { hashPassword } from '../../auth/passwords.js';
import { type Config, databaseKindOf, isSetInEnvironment, readConfig } from '../../config/index.js';
import { createServer, type Server } from '../../http/server.js';
import { formatNano, parseUsdToNano } from '../../money/money.js';
import { redactUrlPassword } from '../../redact-url.js';
import { type Simulator, startSimulator } from '../../simulator/index.js';
import type { Store } from '../../store/types.js';
import { CliError, usageError } from '../cli-error.js';
import { checkDemoDatabase, DEMO_DATABASE_URL } from '../demo-database.js';
import type { Output } from '../output.js';
import { providersAtSimulator } from '../simulator-providers.js';
import { governServerHeap, listenOrClose, shutdownOnSignals, warnAboutSettings } from './serve.js';

export const DEMO_EMAIL = 'demo@tollgate.local';
const DEMO_KEY_NAME = 'demo key';
const DEMO_CREDIT = '10';

/** Makes sure the demo account exists with credit; returns its id and, when just created, its password. */
async function ensureDemoAccount(store: Store): Promise<{ accountId: string; password: string | undefined }> {
  const existing = await store.findAccountByEmail(DEMO_EMAIL);
  if (existing) return { accountId: existing.id, password: undefined };
  const password = randomBytes(12).toString('base64url');
  const created = await store.createAccount({
    email: DEMO_EMAIL,
    role: 'admin',
    passwordHash: await hashPassword(password),
  });
  if (!created.ok) throw new CliError('could not create the demo account');
  await store.addCredit({
    accountId: created.account.id,
    amountNano: parseUsdToNano(DEMO_CREDIT) ?? 0,
    note: 'demo credit',
  });
  return { accountId: created.account.id, password };
}

/** `word` as one shell word: as is when it needs no quoting, else in single quotes. */
function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/**
 * `tollgate demo` — the local upstream simulator, the gateway with every provider pointed at it, a demo
 * account with credit, and a fresh API key with a ready curl line. Its database is `./data/demo.db`, or
 * the one `--database` names; never DATABASE_URL, which in an operator's shell points at the real
 * database. Nor REDIS_URL: the demo's simulated providers are no business of real instances. A database
 * the demo did not create is refused (`checkDemoDatabase`).
 */
export async function demo(
  args: { latencyMs: number; database: string | undefined; stream?: boolean },
  out: Output,
): Promise<void> {
  const databaseUrl = args.database?.trim() || DEMO_DATABASE_URL;
  if (databaseKindOf(databaseUrl) === undefined)
    throw usageError(
      `--database: "${redactUrlPassword(databaseUrl)}" must start with sqlite: or postgres://`,
    );
  if (isSetInEnvironment('DATABASE_URL')) {
    out.info(
      `The demo does not use DATABASE_URL: its data is in ${redactUrlPassword(databaseUrl)}` +
        (args.database ? '.' : ' (--database URL names another).'),
    );
  }
  if (isSetInEnvironment('REDIS_URL')) out.info('The demo does not use REDIS_URL: it runs without Redis.');
  await checkDemoDatabase(databaseUrl, DEMO_EMAIL);

  const simulator = await startSimulator({
    host: '127.0.0.1',
    port: 0,
    latencyMs: args.latencyMs,
    // Streamed demo answers arrive at a pace a person can watch.
    ...(args.stream === true ? { streamChunksPerSecond: 20 } : {}),
  });
  const closeSimulator = () => simulator.close().catch(() => undefined);
  let server: Server;
  let url: string;
  let warnings: readonly string[];
  try {
    const read = demoConfig(simulator, databaseUrl, args.stream === true);
    const config = read.config;
    warnings = read.warnings;
    server = await createServer(config);
    url = await listenOrClose(server, config);
  } catch (err) {
    await closeSimulator();
    throw inUseByAnotherServer(err) ?? err;
  }
  // Before the ready lines, as for `serve`: a SIGTERM sent on reading them drains instead of killing.
  shutdownOnSignals(server, () => simulator.close());
  governServerHeap(server);
  warnAboutSettings(server, warnings);
  try {
    await announce(server, simulator, url, databaseUrl, out);
  } catch (err) {
    await server.close().catch(() => undefined);
    await closeSimulator();
    throw err;
  }
}

/**
 * The store's refusal of a database another server holds, in the demo's words: its advice names
 * DATABASE_URL, which the demo ignores; the demo's own database is chosen with --database. Told by name,
 * as in `cli/main.ts`; undefined for any other error.
 */
function inUseByAnotherServer(err: unknown): CliError | undefined {
  if (!(err instanceof Error) || err.name !== 'DatabaseInUseError') return undefined;
  const database = (err as { database?: unknown }).database;
  return new CliError(
    `another Tollgate server (serve or demo) is running on ${typeof database === 'string' ? database : 'this database'}. ` +
      'Stop it first, or give this demo a database of its own: --database sqlite:./data/demo-2.db',
    1,
    'database_in_use',
  );
}

/** The gateway's configuration: every provider at the simulator, the demo's database, no Redis. */
function demoConfig(
  simulator: Simulator,
  databaseUrl: string,
  stream: boolean,
): { config: Config; warnings: string[] } {
  const overrides: Record<string, string> = {
    DATABASE_URL: databaseUrl,
    REDIS_URL: '',
    ...providersAtSimulator(simulator),
  };
  if (stream) overrides.STREAMING = 'on';
  return readConfig(undefined, {
    overrides,
    defaults: { HOST: '127.0.0.1', LOG_LEVEL: 'warn', SIGNUP: 'open' },
  });
}

/** Prepares the demo account and a fresh key, and prints how to use them. */
async function announce(
  server: Server,
  simulator: Simulator,
  url: string,
  databaseUrl: string,
  out: Output,
): Promise<void> {
  const { accountId, password } = await ensureDemoAccount(server.store);
  for (const key of await server.store.listApiKeys(accountId)) {
    if (key.name === DEMO_KEY_NAME && key.revokedAt === null)
      await server.store.revokeApiKey(accountId, key.id);
  }
  const key = await createKey(server.store, accountId, DEMO_KEY_NAME);
  if (!key.ok) throw new CliError(key.message);
  const account = await server.store.getAccount(accountId);
  const balance = formatNano(account?.balanceNano ?? 0);
  const curl = [
    `curl -s ${url}/api/v1/chat/completions \\`,
    `  -H "Authorization: Bearer ${key.secret}" \\`,
    `  -H "Content-Type: application/json" \\`,
    `  -d '{"messages":[{"role":"user","content":"Hello, Tollgate!"}]}'`,
  ].join('\n');
  // The CLI reads DATABASE_URL, not the demo's choice: the hint names the demo's database itself, so it
  // works as printed (from this directory) and never lands in ./data/tollgate.db.
  const passwordReset = `DATABASE_URL=${shellWord(databaseUrl)} bin/tollgate accounts password --email ${DEMO_EMAIL}`;
  out.result(
    {
      url,
      simulator_url: simulator.url,
      dashboard_url: `${url}/`,
      database: redactUrlPassword(databaseUrl),
      email: DEMO_EMAIL,
      password: password ?? null,
      password_reset: passwordReset,
      balance: Number(balance),
      key: key.secret,
      curl,
    },
    [
      `Tollgate demo is running at ${url} (data in ${redactUrlPassword(databaseUrl)})`,
      `  8 providers are served by the local simulator at ${simulator.url}`,
      `  account: ${DEMO_EMAIL}${password ? ` (password: ${password}, shown once)` : ''}, balance $${balance}`,
      `  API key (shown once): ${key.secret}`,
      `  dashboard: ${url}/ — log in as ${DEMO_EMAIL} (an admin)${password ? '' : '; its password was shown at the first run. A new one:'}`,
      ...(password ? [] : [`    ${passwordReset}`]),
      '',
      'Try it:',
      curl,
      '',
      `OpenAI SDKs: base URL ${url}/api/v1 with the key above; for the SDK example of README.md:`,
      `  export TOLLGATE_KEY=${key.secret}`,
      'Press Ctrl+C to stop.',
    ].join('\n'),
  );
}
