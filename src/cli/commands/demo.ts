import { randomBytes } from 'node:crypto';
import { createKey } from '../../auth/keys.js';
import { hashPassword } from '../../auth/passwords.js';
import { formatNano, parseUsdToNano } from '../../billing/money.js';
import { loadConfig } from '../../config/index.js';
import { createServer } from '../../http/server.js';
import { CATALOG, envNameOf } from '../../providers/catalog.js';
import { startSimulator } from '../../simulator/index.js';
import type { Store } from '../../store/types.js';
import { CliError } from '../cli-error.js';
import type { Output } from '../output.js';
import { governServerHeap, shutdownOnSignals } from './serve.js';

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

/**
 * `tollgate demo` — the local upstream simulator, the gateway with every provider pointed at it, a demo
 * account with credit, and a fresh API key with a ready curl line. Uses `./data/demo.db` unless
 * DATABASE_URL says otherwise, so the demo never mixes with a real database.
 */
export async function demo(args: { latencyMs: number }, out: Output): Promise<void> {
  const simulator = await startSimulator({ host: '127.0.0.1', port: 0, latencyMs: args.latencyMs });
  const overrides: Record<string, string> = {};
  for (const entry of CATALOG) {
    const name = envNameOf(entry.name);
    overrides[`PROV_${name}_BASE_URL`] = simulator.baseUrl(
      entry.wireFormat,
      entry.name.replace(/^prov-/, ''),
    );
    overrides[`PROV_${name}_API_KEY`] = `simulator-${randomBytes(8).toString('hex')}`;
    overrides[`PROV_${name}_ENABLED`] = 'true';
  }
  const config = loadConfig(process.env, {
    overrides,
    defaults: { DATABASE_URL: 'sqlite:./data/demo.db', HOST: '127.0.0.1', LOG_LEVEL: 'warn', SIGNUP: 'open' },
  });
  const server = await createServer(config);
  const url = await server.listen();
  governServerHeap(server);

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
  out.result(
    {
      url,
      simulator_url: simulator.url,
      dashboard_url: `${url}/`,
      email: DEMO_EMAIL,
      password: password ?? null,
      balance: Number(balance),
      key: key.secret,
      curl,
    },
    [
      `Tollgate demo is running at ${url}`,
      `  8 providers are served by the local simulator at ${simulator.url}`,
      `  account: ${DEMO_EMAIL}${password ? ` (password: ${password}, shown once)` : ''}, balance $${balance}`,
      `  API key (shown once): ${key.secret}`,
      `  dashboard: ${url}/ — log in as ${DEMO_EMAIL} (an admin)${password ? '' : `; the password was shown at the first run (new one: bin/tollgate accounts password --email ${DEMO_EMAIL})`}`,
      '',
      'Try it:',
      curl,
      '',
      `OpenAI SDKs: base URL ${url}/api/v1 with the key above. Press Ctrl+C to stop.`,
    ].join('\n'),
  );
  shutdownOnSignals(server, () => simulator.close());
}
