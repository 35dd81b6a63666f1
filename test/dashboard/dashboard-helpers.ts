import pino, { type Logger } from 'pino';
import { hashPassword } from '../../src/auth/passwords.js';
import { type Config, loadConfig } from '../../src/config/index.js';
import { createServer, type Server } from '../../src/http/server.js';
import type { Simulator } from '../../src/simulator/index.js';
import type { AccountRole } from '../../src/store/types.js';
import { startTestBackends } from '../helpers/harness.js';
import type { TestDatabase } from '../helpers/test-database.js';

export interface Harness {
  server: Server;
  sim: Simulator;
  config: Config;
  dir: string;
  /** The database under test (SQLite file, or a fresh PostgreSQL schema with TEST_DATABASE=postgres). */
  db: TestDatabase;
  /** POST /api/v1/chat/completions in-process with an API key. */
  chat(key: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }>;
  close(): Promise<void>;
}

export const PASSWORD = 'correct horse battery staple';

export interface Response {
  status: number;
  body: Record<string, unknown>;
  text: string;
  headers: Record<string, string | string[] | number | undefined>;
}

/**
 * A browser-like client of the dashboard API over `app.inject`: keeps the session cookie it is given and
 * sends the CSRF token of its session on state-changing calls, as the single-page app does.
 */
export class DashboardClient {
  cookie: string | undefined;
  csrf: string | undefined;

  constructor(private readonly h: Harness) {}

  async request(
    method: 'GET' | 'POST' | 'DELETE' | 'PUT' | 'PATCH',
    url: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Response> {
    const all: Record<string, string> = { ...headers };
    if (this.cookie && !('cookie' in all)) all.cookie = this.cookie;
    if (method !== 'GET' && this.csrf && !('x-csrf-token' in all)) all['x-csrf-token'] = this.csrf;
    if (body !== undefined) all['content-type'] = 'application/json';
    const res = await this.h.server.app.inject({
      method,
      url: `/dashboard/api${url}`,
      headers: all,
      ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
    });
    const setCookie = res.headers['set-cookie'];
    for (const c of Array.isArray(setCookie) ? setCookie : setCookie ? [setCookie] : []) {
      const pair = c.split(';')[0] ?? '';
      this.cookie = pair.endsWith('=') ? undefined : pair;
    }
    let parsed: Record<string, unknown> = {};
    try {
      parsed = res.body ? (JSON.parse(res.body) as Record<string, unknown>) : {};
    } catch {
      parsed = {};
    }
    if (typeof parsed.csrf_token === 'string') this.csrf = parsed.csrf_token;
    return { status: res.statusCode, body: parsed, text: res.body, headers: res.headers };
  }

  get(url: string) {
    return this.request('GET', url);
  }
  post(url: string, body: unknown = {}) {
    return this.request('POST', url, body);
  }
  delete(url: string) {
    return this.request('DELETE', url);
  }

  async login(email: string, password = PASSWORD): Promise<Response> {
    const res = await this.post('/auth/login', { email, password });
    if (res.status !== 200) throw new Error(`login failed: ${res.status} ${res.text}`);
    return res;
  }
}

/** Creates an account with a dashboard password (and optional credit) directly in the store. */
export async function createUser(
  h: Harness,
  options: { email?: string; role?: AccountRole; usd?: number; password?: string } = {},
): Promise<{ id: string; email: string }> {
  const email = options.email ?? `u-${Math.random().toString(36).slice(2)}@example.test`;
  const created = await h.server.store.createAccount({
    email,
    role: options.role ?? 'user',
    passwordHash: await hashPassword(options.password ?? PASSWORD),
  });
  if (!created.ok) throw new Error('account exists');
  if (options.usd) {
    await h.server.store.addCredit({
      accountId: created.account.id,
      amountNano: Math.round(options.usd * 1_000_000_000),
      note: 'test credit',
    });
  }
  return { id: created.account.id, email };
}

export interface DashboardHarnessOptions {
  env?: Record<string, string>;
  /** A logger to capture log lines (default: silent). */
  logger?: Logger;
  /** The built app to serve at `/` (default: the package's web/dist). */
  webRoot?: string;
  simLatencyMs?: number;
}

/**
 * A server on a fresh database (SQLite, or PostgreSQL with TEST_DATABASE=postgres, like the shared
 * harness) with every provider pointed at a fresh simulator, plus what the dashboard tests need: a chosen
 * logger and web root, open sign-up by default.
 */
export async function startDashboardHarness(options: DashboardHarnessOptions = {}): Promise<Harness> {
  const backends = await startTestBackends('tollgate-dash-', options);
  const { dir, db, sim } = backends;
  const env = { ...backends.env, SIGNUP: 'open' };
  const config = loadConfig({ ...env, ...options.env });
  const server = await createServer(config, {
    logger: options.logger ?? pino({ level: 'silent' }),
    ...(options.webRoot ? { webRoot: options.webRoot } : {}),
  });
  return {
    server,
    sim,
    config,
    dir,
    db,
    async chat(key, body = { messages: [{ role: 'user', content: 'Hello there' }] }) {
      const res = await server.app.inject({
        method: 'POST',
        url: '/api/v1/chat/completions',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        payload: JSON.stringify(body),
      });
      return { status: res.statusCode, body: JSON.parse(res.body) as Record<string, unknown> };
    },
    async close() {
      await server.close();
      await backends.close();
    },
  };
}

/** The error code of a response in the documented error shape (fails the test when it is not that shape). */
export function codeOf(res: Response): string {
  const error = res.body.error as { message?: unknown; type?: unknown; code?: unknown } | undefined;
  if (!error || typeof error.message !== 'string' || typeof error.type !== 'string') {
    throw new Error(`not an error body: ${res.status} ${res.text}`);
  }
  return String(error.code);
}
