import { connect, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { postChat, startListening } from '../compat/compat-helpers.js';
import type { Harness } from '../helpers/harness.js';

/**
 * Streamed answers whose clients stop reading (raw sockets that send a request and never read its
 * answer), over real sockets: the stall timeout (`STREAM_STALL_TIMEOUT_MS`) and the stream deadline
 * (`STREAM_TIMEOUT_MS`) close them and settle them like clients that left — hold released, billed what
 * was delivered, never above the hold, the ledger clean; and one key's streams cannot take every
 * in-flight slot, so another account is still served. The timeouts are set small; the waits below are
 * liveness bounds (what never happens fails them), not measurements.
 */

const LIVENESS_MS = 60_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor<T>(read: () => T | Promise<T>, done: (value: T) => boolean, ms = LIVENESS_MS) {
  const until = Date.now() + ms;
  let value = await read();
  while (!done(value) && Date.now() < until) {
    await sleep(50);
    value = await read();
  }
  return value;
}

/** A long answer sent as fast as it is taken: far more than every socket buffer on the way can hold. */
function longAnswer(h: Harness): Record<string, unknown> {
  h.sim.setReplyWords(25_000);
  h.sim.setStream({ chunks: 100_000, chunksPerSecond: 0 });
  return {
    model: 'prov-deepseek',
    messages: [{ role: 'user', content: 'Write a very long answer' }],
    stream: true,
    max_tokens: 100_000,
  };
}

/**
 * A client that sends its request and then reads nothing: its socket is paused at once, so the kernel's
 * buffers fill and the gateway's writes stop draining. `readRest` reads what it was sent, to the end.
 */
function stalledClient(baseURL: string, key: string, body: unknown) {
  const url = new URL(baseURL);
  const payload = JSON.stringify(body);
  const socket: Socket = connect(Number(url.port), '127.0.0.1');
  socket.pause();
  socket.write(
    `POST ${url.pathname}/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`,
  );
  socket.on('error', () => {});
  return {
    socket,
    /**
     * Everything the server sent, once it has closed the connection; `closed: false` when it still had
     * not after the liveness bound (a finished response on a kept-alive connection stays open).
     */
    readRest(): Promise<{ text: string; closed: boolean }> {
      return new Promise((resolve) => {
        let text = '';
        const timer = setTimeout(() => {
          socket.destroy();
          resolve({ text, closed: false });
        }, LIVENESS_MS);
        socket.setEncoding('utf8');
        socket.on('data', (part: string) => {
          text += part;
        });
        socket.once('close', () => {
          clearTimeout(timer);
          resolve({ text, closed: true });
        });
        socket.resume();
      });
    },
  };
}

/** The account's one streamed call is settled: no hold, a usage row, the ledger consistent. */
async function expectSettled(h: Harness, accountId: string, heldNano: number, before: number) {
  expect(await h.server.store.openHoldsNano(accountId)).toBe(0);
  const charge = before - (await h.balanceNano(accountId));
  expect(charge).toBeGreaterThan(0);
  expect(charge).toBeLessThanOrEqual(heldNano);
  const rows = await h.server.store.listUsage(accountId, { limit: 5 });
  expect(rows).toHaveLength(1);
  expect((rows[0]?.inputCostNano ?? 0) + (rows[0]?.outputCostNano ?? 0)).toBe(charge);
  const report = await h.server.store.ledgerCheck();
  expect(report.problems).toEqual([]);
  expect(report.ok).toBe(true);
  return rows[0];
}

/**
 * Opens a stalled stream and waits until the gateway holds money for it and has begun relaying it; with
 * `untilStill`, also until the upstream's progress has stopped (the client's buffers are full) while
 * the stream is still open.
 */
async function stall(h: Harness, baseURL: string, key: string, accountId: string, untilStill = false) {
  const streams = h.sim.streams('deepseek').length;
  const client = stalledClient(baseURL, key, longAnswer(h));
  const held = await waitFor(
    () => h.server.store.openHoldsNano(accountId),
    (n) => n > 0,
  );
  expect(held).toBeGreaterThan(0);
  let record = await waitFor(
    () => h.sim.streams('deepseek')[streams],
    (s) => s !== undefined && s.piecesSent > 0,
  );
  expect(record).toBeDefined();
  if (untilStill) {
    let still = 0;
    while (still < 4 && record?.outcome === 'open') {
      await sleep(250);
      const now = h.sim.streams('deepseek')[streams];
      still = now?.piecesSent === record?.piecesSent ? still + 1 : 0;
      record = now;
    }
    expect(record?.outcome).toBe('open');
    expect(record?.piecesSent).toBeLessThan(record?.piecesPlanned ?? 0);
    expect(await h.server.store.openHoldsNano(accountId)).toBe(held);
  }
  return { client, held };
}

describe('a client that stops reading (STREAM_STALL_TIMEOUT_MS=1000)', () => {
  let h: Harness;
  let baseURL: string;
  beforeAll(async () => {
    ({ h, baseURL } = await startListening({
      env: {
        STREAMING: 'on',
        TOKENIZER_PRELOAD: 'true',
        STREAM_STALL_TIMEOUT_MS: '1000',
        // Longer than the liveness bound: only the gateway's own cut may close a stalled connection.
        KEEP_ALIVE_TIMEOUT_MS: '600000',
      },
    }));
  });
  afterEach(() => {
    h.sim.setStream({ chunks: 12, chunksPerSecond: 0 });
    h.sim.setReplyWords(40);
  });
  afterAll(async () => {
    await h.close();
  });

  it('is cut after the stall timeout and settled as a client that left: hold released, billed what was sent', async () => {
    const { accountId, key } = await h.newAccount('10');
    const before = await h.balanceNano(accountId);
    const { client, held } = await stall(h, baseURL, key, accountId);

    // The gateway gives up on the client: the upstream is closed, the call settled.
    const record = await waitFor(
      () => h.sim.streams('deepseek').at(-1),
      (s) => s !== undefined && s.outcome !== 'open',
    );
    expect(record?.outcome).toBe('client_closed');
    expect(record?.piecesSent).toBeLessThan(record?.piecesPlanned ?? 0);
    await waitFor(
      () => h.server.store.openHoldsNano(accountId),
      (n) => n === 0,
    );
    const row = await expectSettled(h, accountId, held, before);
    expect(row).toMatchObject({ status: 'ok', clientGone: true, usageEstimated: true });

    // The connection was closed by the server: what the client finally reads is a stream cut short.
    const { text, closed } = await client.readRest();
    expect(closed).toBe(true);
    expect(text.startsWith('HTTP/1.1 200')).toBe(true);
    expect(text).toContain('"content":');
    expect(text).not.toContain('[DONE]');

    // The slots are back: the same key is served again.
    const again = await postChat(baseURL, key, {
      model: 'prov-deepseek',
      messages: [{ role: 'user', content: 'Hello' }],
      stream: true,
    });
    expect(again.status).toBe(200);
    expect(again.events.at(-1)).toBe('[DONE]');
  }, 120_000);
});

describe('the stream deadline (STREAM_TIMEOUT_MS=10000) bounds a stalled stream', () => {
  let h: Harness;
  let baseURL: string;
  beforeAll(async () => {
    ({ h, baseURL } = await startListening({
      env: {
        STREAMING: 'on',
        TOKENIZER_PRELOAD: 'true',
        STREAM_TIMEOUT_MS: '10000',
        // Far longer than the deadline: only the deadline can end the stream here.
        STREAM_STALL_TIMEOUT_MS: '600000',
        KEEP_ALIVE_TIMEOUT_MS: '600000',
      },
    }));
  });
  afterAll(async () => {
    await h.close();
  });

  it('ends it and settles it, within the hold', async () => {
    const { accountId, key } = await h.newAccount('10');
    const before = await h.balanceNano(accountId);
    // Stalled well before the deadline: only the deadline can end it now.
    const { client, held } = await stall(h, baseURL, key, accountId, true);
    await waitFor(
      () => h.server.store.openHoldsNano(accountId),
      (n) => n === 0,
    );
    const row = await expectSettled(h, accountId, held, before);
    expect(row).toMatchObject({ clientGone: true });
    // The server closed the connection: the stream does not outlive its deadline, even unread.
    const { text, closed } = await client.readRest();
    expect(closed).toBe(true);
    expect(text.startsWith('HTTP/1.1 200')).toBe(true);
    expect(text).not.toContain('[DONE]');
    expect(h.sim.streams('deepseek').at(-1)?.outcome).not.toBe('open');
  }, 120_000);
});

describe('one key cannot take every slot (MAX_CONCURRENT_REQUESTS=8, KEY_MAX_CONCURRENT unset)', () => {
  let h: Harness;
  let baseURL: string;
  beforeAll(async () => {
    ({ h, baseURL } = await startListening({
      env: { STREAMING: 'on', TOKENIZER_PRELOAD: 'true', MAX_CONCURRENT_REQUESTS: '8' },
    }));
  });
  afterAll(async () => {
    await h.close();
  });

  it('its streams past half the slots get 429 naming the limit; another account is still served', async () => {
    const attacker = await h.newAccount('10');
    const victim = await h.newAccount('10');
    // Slow streams (4 pieces a second), held open by clients that read nothing.
    h.sim.setStream({ chunks: 400, chunksPerSecond: 4 });
    const body = {
      model: 'prov-deepseek',
      messages: [{ role: 'user', content: 'Tell me a slow story' }],
      stream: true,
    };
    const held = Array.from({ length: 8 }, () => stalledClient(baseURL, attacker.key, body));
    try {
      // Half the slots are the key's: 4 streams run, 4 are refused at once.
      await waitFor(
        () => h.sim.streams('deepseek').filter((s) => s.outcome === 'open').length,
        (n) => n === 4,
      );
      const refused = await Promise.all(
        Array.from({ length: 4 }, () => postChat(baseURL, attacker.key, body)),
      );
      for (const answer of refused) {
        expect(answer.status).toBe(429);
        expect(answer.headers.get('retry-after')).toBe('1');
        const error = (JSON.parse(answer.text) as { error: { code: string; message: string } }).error;
        expect(error.code).toBe('rate_limit_exceeded');
        expect(error.message).toContain('limit 4');
      }

      // The other account: plain calls and a stream, all served.
      h.sim.setStream({ chunks: 12, chunksPerSecond: 0 });
      const statuses: number[] = [];
      for (let i = 0; i < 20; i++) {
        const res = await h.chat({ model: 'prov-deepseek', messages: body.messages }, { key: victim.key });
        statuses.push(res.status);
      }
      expect(statuses.filter((s) => s !== 200)).toEqual([]);
      const stream = await postChat(baseURL, victim.key, body);
      expect(stream.status).toBe(200);
      expect(stream.events.at(-1)).toBe('[DONE]');
    } finally {
      for (const client of held) client.socket.destroy();
    }
    // The attacker's streams end as clients that left, each settled within its hold.
    await waitFor(
      () => h.server.store.openHoldsNano(attacker.accountId),
      (n) => n === 0,
    );
    expect(await h.server.store.openHoldsNano(attacker.accountId)).toBe(0);
    const rows = await h.server.store.listUsage(attacker.accountId, { limit: 20 });
    expect(rows.filter((r) => r.clientGone)).toHaveLength(4);
    expect((await h.server.store.ledgerCheck()).ok).toBe(true);
  }, 120_000);

  it('GET /key reports the share in force', async () => {
    const res = await fetch(`${baseURL}/key`, { headers: { authorization: `Bearer ${h.key}` } });
    const body = (await res.json()) as { limits: { concurrent_requests: number | null } };
    expect(body.limits.concurrent_requests).toBe(4);
  });
});
