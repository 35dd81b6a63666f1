import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { ACCOUNT_FAILURES, IP_FAILURES, WINDOW_MS } from '../../src/auth/login-throttle.js';
import { type Config, loadConfig } from '../../src/config/index.js';
import { inviteCodeHash } from '../../src/dashboard/auth-routes.js';
import { createServer, type Server } from '../../src/http/server.js';
import { startTestBackends, type TestBackends } from '../helpers/harness.js';
import { TEST_REDIS_URL, TEST_USES_REDIS } from '../helpers/test-database.js';
import {
  codeOf,
  createUser,
  DashboardClient,
  type Harness,
  PASSWORD,
  type Response,
} from './dashboard-helpers.js';

/**
 * Every Argon2 verification the servers run (logins, unknown emails' dummy verification, the current
 * password): what a throttle must bound is how many guesses get verified, not how many get answered.
 */
const argon2 = vi.hoisted(() => ({ verifications: 0 }));
vi.mock('@node-rs/argon2', async (importOriginal) => {
  const real = await importOriginal<typeof import('@node-rs/argon2')>();
  return {
    ...real,
    verify: (...args: Parameters<typeof real.verify>) => {
      argon2.verifications += 1;
      return real.verify(...args);
    },
  };
});

/** The servers' clock: the throttle's windows in this process end when it says so. */
const clock = { now: Date.now() };

interface Gateways {
  backends: TestBackends;
  config: Config;
  /** One or more servers on one database (and, with TEST_REDIS, one Redis key prefix). */
  servers: Harness[];
  close(): Promise<void>;
}

/** `count` servers sharing the test database and Redis, with the test's clock; TRUST_PROXY for addresses. */
async function startGateways(count: number, env: Record<string, string> = {}): Promise<Gateways> {
  const backends = await startTestBackends('tollgate-throttle-');
  const config = loadConfig({
    ...backends.env,
    SIGNUP: 'open',
    TRUST_PROXY: 'true',
    // No cap on bodies arriving at once from one address: a burst from one address must meet the login
    // throttle, not be cut short before it.
    ADDRESS_MAX_PENDING_BODIES: '0',
    ...env,
  });
  const started: Server[] = [];
  // One after the other: each runs the migrations at start.
  for (let i = 0; i < count; i++) {
    started.push(await createServer(config, { logger: pino({ level: 'silent' }), now: () => clock.now }));
  }
  const servers = started.map(
    (server): Harness => ({
      server,
      sim: backends.sim,
      config,
      dir: backends.dir,
      db: backends.db,
      chat: () => Promise.reject(new Error('not used here')),
      close: () => server.close(),
    }),
  );
  return {
    backends,
    config,
    servers,
    async close() {
      for (const server of started) await server.close();
      await backends.close();
    },
  };
}

/**
 * The window passes: this process's windows by the clock, and Redis's by their expiry, which the test
 * brings forward after checking that every key would indeed expire within the window.
 */
async function windowPasses(config: Config): Promise<void> {
  clock.now += WINDOW_MS;
  if (!config.redisUrl) return;
  const redis = new Redis(TEST_REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0 });
  try {
    await redis.connect();
    const keys = await redis.keys(`${config.redisKeyPrefix}attempts:*`);
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) {
      const ttl = await redis.pttl(key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(WINDOW_MS);
      await redis.del(key);
    }
  } finally {
    redis.disconnect();
  }
}

function shuffled<T>(items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

/**
 * 399 wrong passwords and the right one, in random order, the right one anywhere after the first `after`
 * (the 400th included): a right password among the guesses the limit allows is a legitimate login, so the
 * test keeps it out of those. `after` is how many may reach the throttle before it: the first
 * `ACCOUNT_FAILURES` sent to one server; each server's first ones with two (each admits its own before
 * asking Redis); more for password changes, which reach the throttle after a session lookup in the
 * database, whose answers may come back out of order.
 */
function burst(right: string, after: number = ACCOUNT_FAILURES): { passwords: string[]; rightAt: number } {
  const wrongs = shuffled(Array.from({ length: 399 }, (_, i) => `wrong password number ${i}`));
  const rightAt = after + Math.floor(Math.random() * (400 - after));
  wrongs.splice(rightAt, 0, right);
  return { passwords: wrongs, rightAt };
}

function tally(responses: Response[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const r of responses) counts[r.status] = (counts[r.status] ?? 0) + 1;
  return counts;
}

let address = 0;
/** A client address of its own for each scenario (TRUST_PROXY), so their per-address counts stay apart. */
const newIp = () => `203.0.113.${++address}`;

let crowd = 0;
/**
 * Addresses for a burst at one email: one per request, as a guesser with many addresses would send it;
 * what must hold it back is the email's limit, not the address's.
 */
function crowdOf(size: number): string[] {
  crowd += 1;
  return Array.from({ length: size }, (_, i) => `10.${crowd}.${Math.floor(i / 256)}.${i % 256}`);
}

function login(h: Harness, email: string, password: string, ip: string): Promise<Response> {
  return new DashboardClient(h).request(
    'POST',
    '/auth/login',
    { email, password },
    { 'x-forwarded-for': ip },
  );
}

beforeEach(() => {
  argon2.verifications = 0;
});

describe('the login throttle holds under concurrency (one server)', () => {
  let g: Gateways;
  let h: Harness;
  beforeAll(async () => {
    g = await startGateways(1);
    h = g.servers[0] as Harness;
  });
  afterAll(async () => {
    await g.close();
  });

  it(`400 logins at once for one email, 399 wrong and the right one: ${ACCOUNT_FAILURES} verified, and the right one refused until the window passes`, async () => {
    const user = await createUser(h);
    const ip = newIp();
    const { passwords, rightAt } = burst(PASSWORD);
    const from = crowdOf(passwords.length);
    const responses = await Promise.all(passwords.map((p, i) => login(h, user.email, p, from[i] as string)));

    console.log(`[throttle] one server: ${argon2.verifications} of 400 logins verified`);
    // The spy sees the server's verifications (so a zero below would mean it saw nothing).
    expect(argon2.verifications).toBeGreaterThan(0);
    expect(argon2.verifications).toBeLessThanOrEqual(ACCOUNT_FAILURES);
    expect(tally(responses)).toEqual({ 401: argon2.verifications, 429: 400 - argon2.verifications });
    const right = responses[rightAt] as Response;
    expect(right.status, `the right password, ${rightAt + 1}th of 400`).toBe(429);
    expect(codeOf(right)).toBe('too_many_attempts');
    expect(right.headers['set-cookie']).toBeUndefined();

    // Still refused later in the window, from anywhere, without a verification.
    argon2.verifications = 0;
    clock.now += WINDOW_MS - 60_000;
    expect((await login(h, user.email, PASSWORD, newIp())).status).toBe(429);
    expect(argon2.verifications).toBe(0);
    clock.now -= WINDOW_MS - 60_000;

    await windowPasses(g.config);
    expect((await login(h, user.email, PASSWORD, ip)).status).toBe(200);
  });

  it('an email without an account is counted the same way', async () => {
    const from = crowdOf(400);
    const responses = await Promise.all(
      from.map((ip, i) => login(h, 'nobody-at-all@example.test', `guess number ${i}`, ip)),
    );
    expect(argon2.verifications).toBeLessThanOrEqual(ACCOUNT_FAILURES);
    expect(tally(responses)).toEqual({ 401: argon2.verifications, 429: 400 - argon2.verifications });
  });

  it(`400 logins at once from one address over 400 emails: at most ${IP_FAILURES} verified`, async () => {
    const ip = newIp();
    const responses = await Promise.all(
      Array.from({ length: 400 }, (_, i) => login(h, `spray-${i}@example.test`, 'a guessed password', ip)),
    );
    expect(argon2.verifications).toBeLessThanOrEqual(IP_FAILURES);
    expect(tally(responses)).toEqual({ 401: argon2.verifications, 429: 400 - argon2.verifications });
    // The refused attempts put nothing on the emails: another address may still try them.
    expect((await login(h, 'spray-399@example.test', 'a guessed password', newIp())).status).toBe(401);
  });

  it(`400 password changes at once, 399 with a wrong current password: ${ACCOUNT_FAILURES} verified`, async () => {
    const user = await createUser(h);
    const ip = newIp();
    const client = new DashboardClient(h);
    const loggedIn = await client.request(
      'POST',
      '/auth/login',
      { email: user.email, password: PASSWORD },
      { 'x-forwarded-for': ip },
    );
    expect(loggedIn.status).toBe(200);
    const { cookie, csrf } = client;
    if (!cookie || !csrf) throw new Error('no session');
    argon2.verifications = 0;

    const change = (current: string, from = ip) =>
      new DashboardClient(h).request(
        'POST',
        '/auth/password',
        { current_password: current, new_password: 'a brand new password' },
        { cookie, 'x-csrf-token': csrf, 'x-forwarded-for': from },
      );
    const { passwords, rightAt } = burst(PASSWORD, 200);
    const from = crowdOf(passwords.length);
    const responses = await Promise.all(passwords.map((p, i) => change(p, from[i])));
    expect(argon2.verifications).toBeLessThanOrEqual(ACCOUNT_FAILURES);
    expect(tally(responses)).toEqual({ 401: argon2.verifications, 429: 400 - argon2.verifications });
    expect((responses[rightAt] as Response).status).toBe(429);

    // The account's email is locked for logins too.
    expect((await login(h, user.email, PASSWORD, newIp())).status).toBe(429);
    await windowPasses(g.config);
    expect((await change(PASSWORD)).status).toBe(200);
    expect((await login(h, user.email, 'a brand new password', ip)).status).toBe(200);
  });
});

describe.runIf(TEST_USES_REDIS)('the login throttle holds under concurrency (two servers, one Redis)', () => {
  let g: Gateways;
  beforeAll(async () => {
    g = await startGateways(2);
  });
  afterAll(async () => {
    await g.close();
  });
  const server = (i: number) => g.servers[i % 2] as Harness;

  it(`400 logins at once over both servers, 399 wrong and the right one: ${ACCOUNT_FAILURES} verified in all`, async () => {
    expect(g.config.redisUrl).toBeTruthy();
    const user = await createUser(server(0));
    const ip = newIp();
    const { passwords, rightAt } = burst(PASSWORD, 2 * ACCOUNT_FAILURES);
    const from = crowdOf(passwords.length);
    const responses = await Promise.all(
      passwords.map((p, i) => login(server(i), user.email, p, from[i] as string)),
    );

    console.log(`[throttle] two servers, one Redis: ${argon2.verifications} of 400 logins verified`);
    expect(argon2.verifications).toBeGreaterThan(0);
    expect(argon2.verifications).toBeLessThanOrEqual(ACCOUNT_FAILURES);
    expect(tally(responses)).toEqual({ 401: argon2.verifications, 429: 400 - argon2.verifications });
    expect((responses[rightAt] as Response).status).toBe(429);

    argon2.verifications = 0;
    for (const i of [0, 1]) expect((await login(server(i), user.email, PASSWORD, newIp())).status).toBe(429);
    expect(argon2.verifications).toBe(0);

    await windowPasses(g.config);
    expect((await login(server(1), user.email, PASSWORD, ip)).status).toBe(200);
  });

  it(`400 password changes at once over both servers: ${ACCOUNT_FAILURES} verified in all`, async () => {
    const user = await createUser(server(0));
    const ip = newIp();
    const client = new DashboardClient(server(0));
    await client.request(
      'POST',
      '/auth/login',
      { email: user.email, password: PASSWORD },
      { 'x-forwarded-for': ip },
    );
    const { cookie, csrf } = client;
    if (!cookie || !csrf) throw new Error('no session');
    argon2.verifications = 0;

    const { passwords, rightAt } = burst(PASSWORD, 200);
    const from = crowdOf(passwords.length);
    const change = (current: string, i: number) =>
      new DashboardClient(server(i)).request(
        'POST',
        '/auth/password',
        { current_password: current, new_password: 'a brand new password' },
        { cookie, 'x-csrf-token': csrf, 'x-forwarded-for': from[i] as string },
      );
    const responses = await Promise.all(passwords.map(change));
    expect(argon2.verifications).toBeLessThanOrEqual(ACCOUNT_FAILURES);
    expect(tally(responses)).toEqual({ 401: argon2.verifications, 429: 400 - argon2.verifications });
    expect((responses[rightAt] as Response).status).toBe(429);
  });
});

describe('sign-up with SIGNUP=invite tells nothing about emails without a usable invite', () => {
  let g: Gateways;
  let h: Harness;
  beforeAll(async () => {
    g = await startGateways(1, { SIGNUP: 'invite' });
    h = g.servers[0] as Harness;
  });
  afterAll(async () => {
    await g.close();
  });

  const signup = (email: string, invite_code: string) =>
    new DashboardClient(h).request(
      'POST',
      '/auth/signup',
      { email, password: PASSWORD, invite_code },
      { 'x-forwarded-for': newIp() },
    );

  async function invite(options: { email?: string; expiresAt?: number } = {}): Promise<string> {
    const admin = await createUser(h, { role: 'admin' });
    const code = `tg_inv_test${Math.random().toString(36).slice(2)}`;
    await h.server.store.dashboard().createInvite({
      codeHash: inviteCodeHash(code),
      createdBy: admin.id,
      email: options.email ?? null,
      note: null,
      expiresAt: options.expiresAt ?? clock.now + 86_400_000,
    });
    return code;
  }

  it('a bogus, used, expired or other-email code answers invalid_invite, existing email or not; a usable one reaches the email check', async () => {
    const taken = await createUser(h);
    const used = await invite();
    expect((await signup('first-user@example.test', used)).status).toBe(201);
    const cases: [string, string][] = [
      ['bogus', 'tg_inv_made_up_by_someone'],
      ['used', used],
      ['expired', await invite({ expiresAt: clock.now - 1 })],
      ['for another email', await invite({ email: 'someone-else@example.test' })],
    ];
    for (const [what, code] of cases) {
      for (const email of [taken.email, 'free-email@example.test']) {
        const res = await signup(email, code);
        expect(res.status, `${what} code, ${email}`).toBe(400);
        expect(codeOf(res), `${what} code, ${email}`).toBe('invalid_invite');
      }
    }

    // Only the holder of a usable code learns that an email is taken, and that does not spend the code.
    const code = await invite();
    const dup = await signup(taken.email, code);
    expect(dup.status).toBe(409);
    expect(codeOf(dup)).toBe('email_taken');
    expect((await signup('second-user@example.test', code)).status).toBe(201);
    expect(codeOf(await signup('third-user@example.test', code))).toBe('invalid_invite');
  });
});
