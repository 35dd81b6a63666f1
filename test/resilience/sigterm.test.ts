import { request as httpRequest } from 'node:http';
import type Database from 'better-sqlite3';
import { Agent, fetch as undiciFetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, waitForExit } from '../helpers/cli.js';
import {
  chargeCounts,
  chatBody,
  killHard,
  minBalance,
  openHolds,
  openReadOnly,
  type ProcessEnv,
  type RunningServer,
  setupProcessEnv,
  sleep,
  startServer,
} from './process-helpers.js';

/**
 * SIGTERM while requests are in flight: the server stops accepting, finishes and settles what it has,
 * and exits 0. Nothing is cut, nothing is charged twice, nothing is left held.
 */

const IN_FLIGHT = 20;
const SLOW_MS = 1500;

let pe: ProcessEnv;
let db: Database.Database | undefined;
let server: RunningServer | undefined;
let key: string;

beforeAll(async () => {
  pe = await setupProcessEnv('sigterm');
  key = (await pe.account('sigterm@example.test', 10_000_000_000)).key;
});

afterAll(async () => {
  await killHard(server);
  db?.close();
  await pe?.cleanup();
});

type LateOutcome =
  | { kind: 'refused'; code: string; ms: number }
  | { kind: 'response'; status: number; body: string; ms: number }
  | { kind: 'hang'; ms: number };

/** One POST on a brand-new connection (no keep-alive pool); gives up after `timeoutMs` and calls that a hang. */
function postOnNewConnection(url: string, timeoutMs: number): Promise<LateOutcome> {
  const started = Date.now();
  return new Promise((resolve) => {
    const payload = chatBody('prov-deepseek', { max_tokens: 16 });
    const req = httpRequest(
      `${url}/api/v1/chat/completions`,
      {
        method: 'POST',
        agent: false,
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
        },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          body += d;
        });
        res.on('end', () =>
          resolve({ kind: 'response', status: res.statusCode ?? 0, body, ms: Date.now() - started }),
        );
        res.on('error', (err: NodeJS.ErrnoException) =>
          resolve({ kind: 'refused', code: err.code ?? err.message, ms: Date.now() - started }),
        );
      },
    );
    req.setTimeout(timeoutMs, () => {
      resolve({ kind: 'hang', ms: Date.now() - started });
      req.destroy();
    });
    req.on('error', (err: NodeJS.ErrnoException) =>
      resolve({ kind: 'refused', code: err.code ?? err.message, ms: Date.now() - started }),
    );
    req.end(payload);
  });
}

describe('SIGTERM drain', () => {
  it(`finishes and settles ${IN_FLIGHT} in-flight requests, refuses new connections, exits 0`, async () => {
    pe.sim.setFault('deepseek', { kind: 'slow', delayMs: SLOW_MS });
    server = await startServer(pe.env, pe.dir);
    const { url, child } = server;

    // The client's own connection pool, closed once every answer is in (see the keep-alive test below for
    // a client that keeps its idle connections open).
    const agent = new Agent();
    const sentAt = Date.now();
    const inFlight = Array.from({ length: IN_FLIGHT }, async () => {
      try {
        const res = await undiciFetch(`${url}/api/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: chatBody('prov-deepseek'),
          dispatcher: agent,
        });
        const body = (await res.json()) as { id?: unknown };
        return { status: res.status, id: typeof body.id === 'string' ? body.id : undefined, err: undefined };
      } catch (err) {
        return { status: 0, id: undefined, err: String(err) };
      }
    });

    // Every request has reached the upstream (so each holds money) before the signal.
    const deadline = Date.now() + 10_000;
    while (pe.sim.requests('deepseek').length < IN_FLIGHT) {
      if (Date.now() > deadline) throw new Error('requests did not reach the upstream');
      await sleep(10);
    }
    const signalAt = Date.now();
    const exited = waitForExit(child).then((code) => ({ code, signal: child.signalCode, at: Date.now() }));
    child.kill('SIGTERM');

    // Give the process a moment to handle the signal and close its listener, then knock on a new connection.
    await sleep(200);
    const late = await postOnNewConnection(url, 5_000);

    const results = await Promise.all(inFlight);
    const lastAnswerMs = Date.now() - sentAt;
    await agent.close();
    const exit = await exited;

    db = openReadOnly(pe.dbFile);
    const charges = chargeCounts(db);
    const holds = openHolds(db);
    const cli = await runCli(['ledger', 'check', '--json'], pe.env);

    console.log(
      `sigterm: in-flight=${IN_FLIGHT} ok=${results.filter((r) => r.status === 200).length} ` +
        `all-answered-after=${lastAnswerMs}ms signal→exit=${exit.at - signalAt}ms exit=${exit.code} ` +
        `late=${JSON.stringify(late).slice(0, 200)} open-holds=${holds.length}`,
    );

    // Drained, not cut: every in-flight request was answered 200 and charged exactly once.
    for (const r of results) {
      expect(r.err).toBeUndefined();
      expect(r.status).toBe(200);
      expect(r.id).toMatch(/^chatcmpl-/);
      expect(charges.get(r.id as string), `charge rows of ${r.id}`).toBe(1);
    }
    expect(new Set(results.map((r) => r.id)).size).toBe(IN_FLIGHT);
    for (const [requestId, n] of charges) expect(n, `charges of ${requestId}`).toBe(1);

    expect(exit.signal).toBeNull();
    expect(exit.code).toBe(0);
    // It waited for the slow upstream, but not for the 120 s request timeout.
    expect(exit.at - signalAt).toBeLessThan(SLOW_MS + 5_000);

    // The late request: refused or answered with an error, never a hang, never an uncharged 200.
    expect(late.kind).not.toBe('hang');
    if (late.kind === 'response') {
      if (late.status === 200) {
        const id = (JSON.parse(late.body) as { id: string }).id;
        expect(charges.get(id), 'a late 200 must be charged').toBe(1);
      } else {
        const parsed = JSON.parse(late.body) as { error?: { message?: unknown; type?: unknown } };
        expect(typeof parsed.error?.message).toBe('string');
        expect(typeof parsed.error?.type).toBe('string');
      }
    } else {
      expect(late.ms).toBeLessThan(1_000);
    }

    expect(holds).toEqual([]);
    expect(minBalance(db)).toBeGreaterThanOrEqual(0);
    expect(cli.code, cli.stdout + cli.stderr).toBe(0);
    expect((JSON.parse(cli.stdout) as { ok: boolean }).ok).toBe(true);
    expect((await pe.store.ledgerCheck()).ok).toBe(true);
    db.close();
    db = undefined;
  }, 30_000);

  it('exits promptly after the drain even when clients keep their idle keep-alive connections open', async () => {
    // A client pool like the openai SDK's: it keeps idle connections for as long as the server's
    // `Keep-Alive: timeout=…` hint allows. The drain must not wait for the client to hang up.
    pe.sim.setFault('deepseek', { kind: 'slow', delayMs: SLOW_MS });
    const before = pe.sim.requests('deepseek').length;
    server = await startServer(pe.env, pe.dir);
    const { url, child } = server;
    const agent = new Agent({ keepAliveTimeout: 60_000, keepAliveMaxTimeout: 600_000 });
    try {
      const inFlight = Array.from({ length: 5 }, async () => {
        const res = await undiciFetch(`${url}/api/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: chatBody('prov-deepseek'),
          dispatcher: agent,
        });
        await res.arrayBuffer();
        return { status: res.status, connection: res.headers.get('connection') };
      });
      const deadline = Date.now() + 10_000;
      while (pe.sim.requests('deepseek').length < before + 5) {
        if (Date.now() > deadline) throw new Error('requests did not reach the upstream');
        await sleep(10);
      }
      const signalAt = Date.now();
      const exited = waitForExit(child).then((code) => ({ code, at: Date.now() }));
      child.kill('SIGTERM');
      const results = await Promise.all(inFlight);
      const answeredMs = Date.now() - signalAt;
      const exit = await Promise.race([exited, sleep(SLOW_MS + 5_000).then(() => undefined)]);
      console.log(
        `sigterm keep-alive: answered ${answeredMs}ms after the signal (statuses ${results.map((r) => r.status)}, ` +
          `connection: ${results.map((r) => r.connection)}); ` +
          (exit
            ? `exit ${exit.code} ${exit.at - signalAt}ms after the signal`
            : `still running ${SLOW_MS + 5_000}ms after the signal`),
      );
      for (const r of results) expect(r.status).toBe(200);
      expect(exit, 'the process is still running with only idle keep-alive connections left').toBeDefined();
      expect(exit?.code).toBe(0);
    } finally {
      await agent.destroy();
    }
  }, 30_000);
});
