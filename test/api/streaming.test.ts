import { request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent, fetch as undiciFetch } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { composeReply } from '../../src/simulator/reply.js';
import type { SimFault, SimStream } from '../../src/simulator/types.js';
import {
  postChat,
  readStreamed,
  type StreamChunk,
  type StreamedAnswer,
  simulatedUsage,
  startListening,
} from '../compat/compat-helpers.js';
import { type Harness, startHarness } from '../helpers/harness.js';

/**
 * Streamed answers (STREAMING=on) at the HTTP level, over real sockets: the events and headers, exact
 * billing, a client that leaves, an upstream that breaks off, failover before the first byte, idempotent
 * replays, a client that reads slowly, the in-flight slot, the switch being off, and the metrics. Every
 * money check reads the store: the balance moves by exactly the bill chunk's `meta.cost.total`, no hold
 * stays open, and the ledger check (what `tollgate ledger check` runs) passes.
 */

let h: Harness;
let baseURL: string;
/** Streams this file's harness served, by how they ended: `tollgate_streams_total` must say the same. */
const ended = { completed: 0, client_gone: 0, upstream_cut: 0 };

const PROVIDERS = [
  ['prov-deepseek', 'deepseek'],
  ['prov-claude', 'claude'],
  ['prov-gemini', 'gemini'],
] as const;

/**
 * A stream that ends early is billed from tokens counted on the gateway's tokenizer thread, which loads
 * on its first use (TOKENIZER_PRELOAD starts it at once) and is waited for only up to a time bound, past
 * which byte counts stand in. Until it answers, the settle of such a stream waits: the tests that time
 * one wait for the thread first — until a streamed answer without upstream usage is counted exactly.
 */
async function warmTokenizer(target: Harness, url: string): Promise<number> {
  const content = 'Warm up the counter';
  const exact = simulatedUsage('deepseek', content);
  const until = Date.now() + 30_000;
  for (let streams = 1; ; streams++) {
    target.sim.setFault('deepseek', { kind: 'no_usage', times: 1 });
    const answer = await postChat(url, target.key, {
      model: 'prov-deepseek',
      messages: message(content),
      stream: true,
    });
    const usage = answer.bill?.usage;
    if (usage?.prompt_tokens === exact.prompt && usage.completion_tokens === exact.completion) return streams;
    if (Date.now() > until)
      throw new Error(
        `the tokenizer thread did not answer in time: ${JSON.stringify(usage)} ${JSON.stringify(exact)} ${answer.status} ${answer.text.slice(0, 300)}`,
      );
    await sleep(200);
  }
}

beforeAll(async () => {
  ({ h, baseURL } = await startListening({
    env: {
      STREAMING: 'on',
      TOKENIZER_PRELOAD: 'true',
      AUTO_PROVIDERS: 'prov-deepseek,prov-qwen',
      // The fault tests fail the same providers several times: no circuit may open in between.
      CIRCUIT_MIN_REQUESTS: '10000',
      // prov-kimi waits briefly for an upstream that says nothing (the stall and hang tests).
      PROV_KIMI_FIRST_BYTE_TIMEOUT_MS: '1000',
      PROV_KIMI_STREAM_IDLE_TIMEOUT_MS: '500',
    },
  }));
  ended.completed += await warmTokenizer(h, baseURL);
});
afterEach(() => {
  // Faults, pace and reply length back to the simulator's defaults (recorded requests are read as deltas).
  for (const slug of ['deepseek', 'claude', 'gemini', 'qwen', 'kimi']) h.sim.setFault(slug, null);
  h.sim.setStream({ chunks: 12, chunksPerSecond: 0 });
  h.sim.setReplyWords(40);
});
afterAll(async () => {
  await h.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `read` until `done` says so or `ms` pass; returns the last value read. */
async function waitFor<T>(read: () => T | Promise<T>, done: (value: T) => boolean, ms = 5_000): Promise<T> {
  const until = Date.now() + ms;
  let value = await read();
  while (!done(value) && Date.now() < until) {
    await sleep(50);
    value = await read();
  }
  return value;
}

function message(content: string) {
  return [{ role: 'user', content }];
}

/** The ledger is consistent, and the account holds nothing any more. */
async function expectSettled(accountId: string): Promise<void> {
  expect(await h.server.store.openHoldsNano(accountId)).toBe(0);
  const report = await h.server.store.ledgerCheck();
  expect(report.problems).toEqual([]);
  expect(report.ok).toBe(true);
}

/**
 * A streamed request left open: read it event by event, abort it, or read it to the end. It has a
 * connection pool of its own, destroyed with it: the global fetch opens a spare connection to the server
 * when a request is aborted, which never sends a request and would hold the harness's shutdown for its
 * whole drain time.
 */
async function openStream(key: string, body: unknown, headers: Record<string, string> = {}, url = baseURL) {
  const controller = new AbortController();
  const agent = new Agent();
  const res = await undiciFetch(`${url}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    signal: controller.signal,
    dispatcher: agent,
  });
  const reader = (res.body as unknown as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = '';
  /** Reads until `enough(text)` or the end of the body. */
  async function readUntil(enough: (text: string) => boolean): Promise<string> {
    while (!enough(text)) {
      const next = await reader.read();
      if (next.done) break;
      text += decoder.decode(next.value, { stream: true });
    }
    return text;
  }
  return {
    res,
    readUntil,
    /** Closes the connection from the client's side; the time it did. */
    abort(): number {
      const at = Date.now();
      controller.abort();
      void agent.destroy();
      return at;
    },
    async rest(): Promise<StreamedAnswer> {
      await readUntil(() => false);
      await agent.close();
      return readStreamed(res.status, res.headers as unknown as Headers, text);
    },
  };
}

/** The stream metrics of the harness: streams ended by outcome, streams in flight, first tokens seen. */
async function streamMetrics(): Promise<{
  counted: Record<string, number>;
  inFlight: number | undefined;
  firstTokens: number;
}> {
  const res = await h.server.app.inject({ method: 'GET', url: '/metrics' });
  expect(res.statusCode).toBe(200);
  const counted: Record<string, number> = { completed: 0, client_gone: 0, upstream_cut: 0 };
  let inFlight: number | undefined;
  let firstTokens = 0;
  for (const line of res.body.split('\n')) {
    const total = /^tollgate_streams_total\{(.*)\} (\S+)$/.exec(line);
    const outcome = total && /outcome="([^"]+)"/.exec(total[1] as string)?.[1];
    if (total && outcome) counted[outcome] = (counted[outcome] ?? 0) + Number(total[2]);
    const gauge = /^tollgate_streams_in_flight (\S+)$/.exec(line);
    if (gauge) inFlight = Number(gauge[1]);
    const count = /^tollgate_stream_first_token_seconds_count\{.*\} (\S+)$/.exec(line);
    if (count) firstTokens += Number(count[1]);
  }
  return { counted, inFlight, firstTokens };
}

/** The content events (choice 0 with text) of a streamed answer. */
function contentChunks(answer: StreamedAnswer): StreamChunk[] {
  return answer.chunks.filter((c) => (c.choices?.[0]?.delta.content ?? '') !== '');
}

/**
 * The answer is one clean, complete stream, in OpenAI's order, ending with the bill and `[DONE]`; its
 * text in at least `minPieces` content chunks (a replay sends the stored text as one). Without
 * `stream_options.include_usage` the bill rides on the finish chunk: no chunk has empty `choices`.
 */
function expectCleanStream(answer: StreamedAnswer, provider: string, minPieces = 3): void {
  expect(answer.status).toBe(200);
  expect(answer.headers.get('content-type')).toMatch(/^text\/event-stream/);
  expect(answer.events.at(-1)).toBe('[DONE]');
  expect(answer.events.filter((e) => e === '[DONE]')).toHaveLength(1);
  expect(answer.chunks.some((c) => c.error !== undefined)).toBe(false);
  const { chunks } = answer;
  expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
  expect(chunks.every((c) => c.object === 'chat.completion.chunk')).toBe(true);
  // The role once, in the first chunk; content; then the finish reason in a chunk of its own, the bill's.
  expect(chunks[0]?.choices[0]?.delta.role).toBe('assistant');
  expect(chunks.filter((c) => c.choices[0]?.delta.role !== undefined)).toHaveLength(1);
  expect(contentChunks(answer).length).toBeGreaterThanOrEqual(minPieces);
  expect(chunks.every((c) => c.choices.length > 0)).toBe(true);
  expect(chunks.slice(0, -1).every((c) => c.choices[0]?.finish_reason === null && c.meta === undefined)).toBe(
    true,
  );
  const bill = chunks.at(-1) as StreamChunk;
  expect(bill).toBe(answer.bill);
  expect(bill.choices).toEqual([{ index: 0, delta: {}, finish_reason: 'stop' }]);
  expect(bill.meta?.provider).toBe(provider);
  expect(bill.usage?.total_tokens).toBe(
    (bill.usage?.prompt_tokens ?? 0) + (bill.usage?.completion_tokens ?? 0),
  );
  expect(bill.usage?.cost).toBe(answer.billedNano / 1e9);
}

describe('a streamed answer on each wire format', () => {
  it.each(PROVIDERS)(
    '%s: events in order, the upstream’s usage, billed exactly; the headers',
    async (provider, slug) => {
      const { accountId, key } = await h.newAccount('10');
      const content = 'Hello there harbor';
      // `seed` is a sampling setting Anthropic's format lacks (docs/api.md): left out, and the header says so.
      const answer = await postChat(baseURL, key, {
        model: provider,
        messages: message(content),
        stream: true,
        seed: 7,
      });
      ended.completed++;
      expectCleanStream(answer, provider);
      expect(answer.headers.get('x-request-id')).toMatch(/\S/);
      expect(answer.headers.get('cache-control')).toBe('no-cache');
      expect(answer.headers.get('x-tollgate-dropped-params')).toBe(slug === 'claude' ? 'seed' : null);
      expect(answer.content).toBe(composeReply(slug, content, Number.MAX_SAFE_INTEGER, []).text);
      const upstream = simulatedUsage(slug, content);
      expect(answer.bill?.usage).toMatchObject({
        prompt_tokens: upstream.prompt,
        completion_tokens: upstream.completion,
      });
      expect(answer.chunks[0]?.model).toMatch(/\S/);
      expect(10_000_000_000 - (await h.balanceNano(accountId))).toBe(answer.billedNano);
      expect(Math.round((answer.bill?.meta?.balance ?? 0) * 1e9)).toBe(await h.balanceNano(accountId));
      const [row] = await h.server.store.listUsage(accountId, { limit: 5 });
      expect(row).toMatchObject({
        requestId: answer.bill?.id,
        provider,
        status: 'ok',
        usageEstimated: false,
        clientGone: false,
        inputCostNano: Math.round((answer.bill?.meta?.cost.input ?? 0) * 1e9),
        outputCostNano: Math.round((answer.bill?.meta?.cost.output ?? 0) * 1e9),
      });
      // The upstream was asked to stream, with the seed where the format takes one.
      const sent = h.sim.requests(slug).at(-1);
      expect(sent?.stream).toBe(true);
      expect(JSON.stringify(sent?.body).includes('"seed":7')).toBe(slug !== 'claude');
      await expectSettled(accountId);
    },
  );

  it.each(['prov-deepseek', 'prov-gemini'] as const)(
    '%s with logprobs: the log probabilities come in the chunk of the text they score, as OpenAI sends them',
    async (provider) => {
      const answer = await postChat(baseURL, h.key, {
        model: provider,
        messages: message('Hello with probabilities'),
        stream: true,
        logprobs: true,
        top_logprobs: 1,
      });
      ended.completed++;
      expectCleanStream(answer, provider);
      const withLogprobs = answer.chunks.filter((c) => c.choices?.[0]?.logprobs != null);
      expect(withLogprobs.length).toBeGreaterThan(2);
      // No chunk of log probabilities alone, with an empty delta: each is the chunk of the text it scores.
      for (const chunk of withLogprobs) expect(chunk.choices[0]?.delta.content ?? '').not.toBe('');
      const tokens = withLogprobs.flatMap((c) => c.choices[0]?.logprobs?.content.map((t) => t.token) ?? []);
      expect(tokens.join('')).toBe(answer.content);
    },
  );

  it('an account without credit gets an ordinary 402, with no upstream call', async () => {
    const { key } = await h.newAccount('0');
    const before = h.sim.requests('deepseek').length;
    const answer = await postChat(baseURL, key, {
      model: 'prov-deepseek',
      messages: message('Hello'),
      stream: true,
    });
    expect(answer.status).toBe(402);
    expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
    expect(JSON.parse(answer.text)).toMatchObject({ error: { code: 'insufficient_balance' } });
    expect(h.sim.requests('deepseek').length).toBe(before);
  });

  it('stream_options without stream: true is refused, 400 invalid_request on stream_options', async () => {
    const before = h.sim.requests('deepseek').length;
    const answer = await postChat(baseURL, h.key, {
      model: 'prov-deepseek',
      messages: message('Hello'),
      stream_options: { include_usage: true },
    });
    expect(answer.status).toBe(400);
    expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
    expect(JSON.parse(answer.text)).toMatchObject({
      error: { type: 'invalid_request_error', code: 'invalid_request', param: 'stream_options' },
    });
    expect(h.sim.requests('deepseek').length).toBe(before);
  });
});

describe('a client that leaves mid-stream', () => {
  it.each(PROVIDERS)(
    '%s: the upstream is closed at once; billed what was generated, within the hold',
    async (provider, slug) => {
      const { accountId, key } = await h.newAccount('10');
      const content = 'Tell me a slow story';
      // A slow stream: 50 pieces at 10 a second, so that it is still running when the client leaves.
      h.sim.setStream({ chunks: 50, chunksPerSecond: 10 });
      const before = await h.balanceNano(accountId);
      const open = await openStream(key, { model: provider, messages: message(content), stream: true });
      expect(open.res.status).toBe(200);
      await open.readUntil((text) => text.includes('"content":'));
      const hold = await h.server.store.openHoldsNano(accountId);
      expect(hold).toBeGreaterThan(0);
      const abortedAt = open.abort();
      ended.client_gone++;

      // The simulator saw its connection closed, well before the stream's end.
      const record = await waitFor(
        () => h.sim.streams(slug).at(-1) as SimStream,
        (s) => s.outcome !== 'open',
      );
      expect(record.outcome).toBe('client_closed');
      expect(record.closedEarlyAt).not.toBeNull();
      expect(record.closedEarlyAt as number).toBeGreaterThanOrEqual(abortedAt);
      expect(record.closedEarlyAt as number).toBeLessThan(abortedAt + 1_000);
      expect(record.piecesSent).toBeLessThan(record.piecesPlanned);

      // Settled: the hold is gone, the charge is the prompt and the tokens so far, never above the hold.
      expect(
        await waitFor(
          () => h.server.store.openHoldsNano(accountId),
          (n) => n === 0,
        ),
      ).toBe(0);
      const charge = before - (await h.balanceNano(accountId));
      expect(charge).toBeGreaterThan(0);
      expect(charge).toBeLessThanOrEqual(hold);
      const [row] = await h.server.store.listUsage(accountId, { limit: 5 });
      expect(row).toMatchObject({ provider, status: 'ok', clientGone: true, usageEstimated: true });
      expect(row?.inputCostNano ?? 0).toBeGreaterThan(0);
      expect((row?.inputCostNano ?? 0) + (row?.outputCostNano ?? 0)).toBe(charge);
      expect(row?.completionTokens).toBeLessThan(simulatedUsage(slug, content).completion);
      await expectSettled(accountId);
    },
  );
});

describe('an upstream that breaks off mid-stream', () => {
  const cases = PROVIDERS.flatMap(([provider, slug]) =>
    (['cut', 'stream_error'] as const).map((kind) => [provider, slug, kind] as const),
  );
  it.each(cases)(
    '%s (%s), fault %s: content, the bill, then an error event; billed what was streamed',
    async (provider, slug, kind) => {
      const { accountId, key } = await h.newAccount('10');
      const content = 'Tell me a story that breaks';
      h.sim.setFault(slug, { kind, afterChunks: 3, times: 1 });
      const answer = await postChat(baseURL, key, {
        model: provider,
        messages: message(content),
        stream: true,
      });
      ended.upstream_cut++;
      expect(answer.status).toBe(200);
      expect(h.sim.streams(slug).at(-1)?.outcome).toBe(kind === 'cut' ? 'cut' : 'error_event');

      // What arrived is the answer's beginning; no finish reason, no [DONE].
      const full = composeReply(slug, content, Number.MAX_SAFE_INTEGER, []).text;
      expect(answer.content.length).toBeGreaterThan(0);
      expect(answer.content.length).toBeLessThan(full.length);
      expect(full.startsWith(answer.content)).toBe(true);
      expect(answer.events).not.toContain('[DONE]');
      expect(answer.chunks.every((c) => (c.choices ?? []).every((ch) => ch.finish_reason === null))).toBe(
        true,
      );

      // The bill, then the error in OpenAI's streaming shape, last.
      const error = answer.chunks.at(-1) as StreamChunk;
      expect(Object.keys(error)).toEqual(['error']);
      expect(Object.keys(error.error ?? {}).sort()).toEqual(['code', 'message', 'type']);
      expect(error.error?.type).toBe('upstream_error');
      expect(error.error?.message).toContain(provider);
      // No choice finished: the bill rides on an empty delta of choice 0, never on `choices: []`.
      const bill = answer.chunks.at(-2) as StreamChunk;
      expect(bill).toBe(answer.bill);
      expect(bill.choices).toEqual([{ index: 0, delta: {}, finish_reason: null }]);
      expect(answer.chunks.every((c) => c.error !== undefined || c.choices.length > 0)).toBe(true);
      expect(bill.meta?.provider).toBe(provider);

      const charge = 10_000_000_000 - (await h.balanceNano(accountId));
      expect(charge).toBeGreaterThan(0);
      expect(charge).toBe(answer.billedNano);
      const [row] = await h.server.store.listUsage(accountId, { limit: 5 });
      expect(row).toMatchObject({
        requestId: bill.id,
        provider,
        status: 'error',
        errorCode: error.error?.code,
      });
      expect((row?.inputCostNano ?? 0) + (row?.outputCostNano ?? 0)).toBe(charge);
      await expectSettled(accountId);
    },
  );
});

describe('an upstream that goes silent', () => {
  it('mid-stream: the idle timeout ends it as a cut (bill, then provider_timeout) and closes the upstream', async () => {
    const { accountId, key } = await h.newAccount('10');
    h.sim.setFault('kimi', { kind: 'stall', afterChunks: 3, times: 1 });
    const answer = await postChat(baseURL, key, {
      model: 'prov-kimi',
      messages: message('Hello'),
      stream: true,
    });
    ended.upstream_cut++;
    expect(answer.status).toBe(200);
    expect(contentChunks(answer).length).toBeGreaterThan(0);
    expect(answer.events).not.toContain('[DONE]');
    expect(answer.chunks.at(-1)?.error).toMatchObject({ code: 'provider_timeout', type: 'upstream_error' });
    expect(answer.chunks.at(-2)).toBe(answer.bill);
    expect(10_000_000_000 - (await h.balanceNano(accountId))).toBe(answer.billedNano);
    // The gateway gave up on the stalled stream and closed its connection.
    expect(h.sim.streams('kimi').at(-1)?.outcome).toBe('client_closed');
    await expectSettled(accountId);
  });

  it('before the first byte: an ordinary 504 provider_timeout answer, nothing charged', async () => {
    const { accountId, key } = await h.newAccount('10');
    h.sim.setFault('kimi', { kind: 'hang', times: 1 });
    const answer = await postChat(baseURL, key, {
      model: 'prov-kimi',
      messages: message('Hello'),
      stream: true,
    });
    expect(answer.status).toBe(504);
    expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
    expect(JSON.parse(answer.text)).toMatchObject({
      error: { code: 'provider_timeout', type: 'upstream_error' },
    });
    expect(await h.balanceNano(accountId)).toBe(10_000_000_000);
    const [row] = await h.server.store.listUsage(accountId, { limit: 5 });
    expect(row).toMatchObject({
      status: 'error',
      errorCode: 'provider_timeout',
      inputCostNano: 0,
      outputCostNano: 0,
    });
    await expectSettled(accountId);
  });
});

describe('failover before the first byte under model "auto"', () => {
  it.each([
    ['answers 500', { kind: 'status', status: 500, times: 1 }, 'complete'],
    ['cuts before any content', { kind: 'cut', afterChunks: 0, times: 1 }, 'cut'],
    ['resets in the middle of its first event', { kind: 'reset', times: 1 }, 'complete'],
  ] as const)(
    'the first provider %s: one clean stream from the next, billed once',
    async (_what, fault, firstOutcome) => {
      const { accountId, key } = await h.newAccount('10');
      // Auto routing rotates over prov-deepseek and prov-qwen: within two requests, one tries deepseek first.
      h.sim.setFault('deepseek', fault as SimFault);
      let failedOver: StreamedAnswer | undefined;
      let balance = 10_000_000_000;
      for (let i = 0; i < 2 && failedOver === undefined; i++) {
        const deepseekBefore = h.sim.requests('deepseek').length;
        const answer = await postChat(baseURL, key, {
          model: 'auto',
          messages: message('Hello auto'),
          stream: true,
        });
        ended.completed++;
        expectCleanStream(answer, 'prov-qwen');
        const after = await h.balanceNano(accountId);
        expect(balance - after).toBe(answer.billedNano);
        balance = after;
        if (h.sim.requests('deepseek').length > deepseekBefore) failedOver = answer;
      }
      expect(failedOver).toBeDefined();
      const answer = failedOver as StreamedAnswer;
      expect(answer.content).toBe(composeReply('qwen', 'Hello auto', Number.MAX_SAFE_INTEGER, []).text);
      if (firstOutcome === 'cut') expect(h.sim.streams('deepseek').at(-1)?.outcome).toBe('cut');
      expect(h.sim.streams('qwen').at(-1)?.outcome).toBe('complete');
      // One usage row per request, both served by qwen: the failed attempt cost nothing.
      const rows = await h.server.store.listUsage(accountId, { limit: 10 });
      expect(rows.filter((r) => r.requestId === answer.bill?.id)).toHaveLength(1);
      expect(rows.every((r) => r.provider === 'prov-qwen' && r.status === 'ok')).toBe(true);
      await expectSettled(accountId);
    },
  );
});

describe('Idempotency-Key with stream: true', () => {
  it('a repeat while streaming is 409; after, the same text is replayed as a stream, with no upstream call or charge', async () => {
    const { accountId, key } = await h.newAccount('10');
    const body = { model: 'prov-deepseek', messages: message('Hello once only'), stream: true };
    const headers = { 'idempotency-key': `stream-${accountId}` };
    // Slow enough that the repeat arrives while the first is still streaming.
    h.sim.setStream({ chunks: 12, chunksPerSecond: 8 });
    const upstreamBefore = h.sim.requests('deepseek').length;
    const first = await openStream(key, body, headers);
    expect(first.res.status).toBe(200);
    await first.readUntil((text) => text.includes('"content":'));

    const during = await postChat(baseURL, key, body, headers);
    expect(during.status).toBe(409);
    expect(JSON.parse(during.text)).toMatchObject({
      error: { code: 'idempotency_in_progress', type: 'invalid_request_error' },
    });

    const original = await first.rest();
    ended.completed++;
    expectCleanStream(original, 'prov-deepseek');
    expect(original.headers.get('idempotent-replayed')).toBeNull();
    const charged = 10_000_000_000 - (await h.balanceNano(accountId));
    expect(charged).toBe(original.billedNano);

    const replay = await postChat(baseURL, key, body, headers);
    expectCleanStream(replay, 'prov-deepseek', 1);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.content).toBe(original.content);
    expect(replay.bill?.usage).toEqual(original.bill?.usage);
    expect(replay.bill?.meta?.cost).toEqual(original.bill?.meta?.cost);
    // One upstream call, one charge.
    expect(h.sim.requests('deepseek').length).toBe(upstreamBefore + 1);
    expect(10_000_000_000 - (await h.balanceNano(accountId))).toBe(charged);
    expect(await h.server.store.listUsage(accountId, { limit: 10 })).toHaveLength(1);
    // The replay is the same completion: the first stream's id.
    expect(replay.bill?.id).toBe(original.bill?.id);
    await expectSettled(accountId);
  });

  it('a repeat of a stream that broke off replays what it delivered, then stream_incomplete', async () => {
    const { accountId, key } = await h.newAccount('10');
    const body = { model: 'prov-deepseek', messages: message('A story that breaks, once'), stream: true };
    const headers = { 'idempotency-key': `cut-${accountId}` };
    h.sim.setFault('deepseek', { kind: 'cut', afterChunks: 3, times: 1 });
    const first = await postChat(baseURL, key, body, headers);
    ended.upstream_cut++;
    expect(first.chunks.at(-1)?.error?.code).toBe('provider_error');
    const charged = 10_000_000_000 - (await h.balanceNano(accountId));
    expect(charged).toBe(first.billedNano);

    const upstreamBefore = h.sim.requests('deepseek').length;
    const replay = await postChat(baseURL, key, body, headers);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.content).toBe(first.content);
    expect(replay.bill?.id).toBe(first.bill?.id);
    expect(replay.events).not.toContain('[DONE]');
    expect(replay.chunks.at(-1)?.error).toMatchObject({ code: 'stream_incomplete', type: 'upstream_error' });
    expect(h.sim.requests('deepseek').length).toBe(upstreamBefore);
    expect(10_000_000_000 - (await h.balanceNano(accountId))).toBe(charged);
    await expectSettled(accountId);
  });
});

describe('a client that leaves before the answer begins', () => {
  it('ends the upstream call too, and nothing is charged', async () => {
    const { accountId, key } = await h.newAccount('10');
    const before = h.sim.streams('deepseek').length;
    h.sim.setFault('deepseek', { kind: 'hang', times: 1 });
    const controller = new AbortController();
    const dispatcher = new Agent();
    const pending = undiciFetch(`${baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'prov-deepseek', messages: message('Never mind'), stream: true }),
      signal: controller.signal,
      dispatcher,
    }).catch(() => undefined);
    await vi.waitFor(() => expect(h.sim.requests('deepseek').length).toBeGreaterThan(0), { timeout: 5_000 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    controller.abort();
    await pending;
    await dispatcher.destroy();
    // No hold stays open and the balance is whole again: the call was released, not charged.
    await vi.waitFor(async () => expect(await h.balanceNano(accountId)).toBe(10_000_000_000), {
      timeout: 5_000,
    });
    await expectSettled(accountId);
    expect(h.sim.streams('deepseek').length).toBe(before);
  });
});

describe('a client that reads slowly', () => {
  it('holds the upstream back instead of buffering the answer, and then gets all of it intact', async () => {
    const { accountId, key } = await h.newAccount('10');
    const content = 'Write a very long answer';
    // Far more events than every socket buffer between the simulator and the client can hold, sent as
    // fast as they are taken: only the client's pace can slow the simulator down.
    const words = 25_000;
    h.sim.setReplyWords(words);
    h.sim.setStream({ chunks: 100_000, chunksPerSecond: 0 });
    const body = JSON.stringify({
      model: 'prov-deepseek',
      messages: message(content),
      stream: true,
      max_tokens: 100_000,
    });
    const url = new URL(baseURL);
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = httpRequest({
        host: '127.0.0.1',
        port: Number(url.port),
        method: 'POST',
        path: `${url.pathname}/chat/completions`,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      });
      req.once('response', resolve);
      req.once('error', reject);
      req.end(body);
    });
    // Read nothing after the headers: Node stops reading the socket once the response's buffer is full.
    response.pause();
    expect(response.statusCode).toBe(200);

    // The simulator's progress stops well short of the end while the client reads nothing.
    let record = await waitFor(
      () => h.sim.streams('deepseek').at(-1),
      (s) => s !== undefined && s.piecesSent > 0,
      30_000,
    );
    let still = 0;
    const until = Date.now() + 30_000;
    while (still < 4 && Date.now() < until) {
      await sleep(250);
      const now = h.sim.streams('deepseek').at(-1) as SimStream;
      still = now.piecesSent === record?.piecesSent ? still + 1 : 0;
      record = now;
    }
    const paused = record as SimStream;
    expect(still).toBe(4);
    expect(paused.outcome).toBe('open');
    expect(paused.piecesPlanned).toBe(100_000);
    expect(paused.piecesSent).toBeLessThan(paused.piecesPlanned * 0.6);

    // Reading again, the whole answer arrives, one event per piece, in order.
    response.setEncoding('utf8');
    let text = '';
    response.on('data', (part: string) => {
      text += part;
    });
    response.resume();
    await new Promise<void>((resolve, reject) => {
      response.once('end', resolve);
      response.once('error', reject);
    });
    ended.completed++;
    const answer = readStreamed(200, new Headers(), text);
    const sent = h.sim.requests('deepseek').at(-1)?.body as { max_tokens: number };
    const expected = composeReply('deepseek', content, sent.max_tokens, [], words);
    expect(answer.content.length).toBe(expected.text.length);
    expect(answer.content).toBe(expected.text);
    expect(contentChunks(answer)).toHaveLength(paused.piecesPlanned);
    expect(answer.events.at(-1)).toBe('[DONE]');
    expect(answer.bill?.usage?.completion_tokens).toBe(expected.completionTokens);
    expect(h.sim.streams('deepseek').at(-1)?.outcome).toBe('complete');
    expect(10_000_000_000 - (await h.balanceNano(accountId))).toBe(answer.billedNano);
    await expectSettled(accountId);
  }, 60_000);
});

describe('a settle that fails after the stream began (the store unavailable)', () => {
  it('ends the stream with an error event, and the stream is no longer counted in flight', async () => {
    const { key } = await h.newAccount('10');
    const store = h.server.store;
    const settle = store.settle;
    // The store refuses this one settle, as a database outage would.
    store.settle = () => {
      store.settle = settle;
      return Promise.reject(new Error('database unavailable'));
    };
    try {
      const answer = await postChat(baseURL, key, {
        model: 'prov-deepseek',
        messages: message('Hello'),
        stream: true,
      });
      ended.completed++;
      expect(answer.status).toBe(200);
      expect(contentChunks(answer).length).toBeGreaterThan(0);
      expect(answer.bill).toBeUndefined();
      expect(answer.events).not.toContain('[DONE]');
      expect(answer.chunks.at(-1)?.error).toMatchObject({ code: 'internal_error' });
      expect((await streamMetrics()).inFlight).toBe(0);
    } finally {
      store.settle = settle;
    }
  });
});

describe('GET /api/v1/models and /metrics', () => {
  it('/models says streaming: true', async () => {
    const res = await fetch(`${baseURL}/models`, { headers: { authorization: `Bearer ${h.key}` } });
    expect(((await res.json()) as { streaming: boolean }).streaming).toBe(true);
  });

  it('tollgate_streams_total counts every stream above by its outcome; none is in flight', async () => {
    const { counted, inFlight, firstTokens } = await streamMetrics();
    expect(ended.completed).toBeGreaterThan(0);
    expect(ended.client_gone).toBeGreaterThan(0);
    expect(counted).toEqual(ended);
    expect(inFlight).toBe(0);
    // Every stream that began saw its first token once (a replay does not reach the upstream).
    expect(firstTokens).toBe(ended.completed + ended.client_gone + ended.upstream_cut);
  });
});

describe('the in-flight slot of a key (KEY_MAX_CONCURRENT=1)', () => {
  it('is held while a stream runs and given back when it ends or its client leaves', async () => {
    const { h: limited, baseURL: limitedURL } = await startListening({
      env: { STREAMING: 'on', KEY_MAX_CONCURRENT: '1', TOKENIZER_PRELOAD: 'true' },
    });
    try {
      await warmTokenizer(limited, limitedURL);
      const body = { model: 'prov-deepseek', messages: message('Hello slot'), stream: true };
      expectCleanStream(await postChat(limitedURL, limited.key, body), 'prov-deepseek');
      expectCleanStream(await postChat(limitedURL, limited.key, body), 'prov-deepseek');

      limited.sim.setStream({ chunks: 50, chunksPerSecond: 10 });
      const open = await openStream(limited.key, body, {}, limitedURL);
      await open.readUntil((text) => text.includes('"content":'));
      const second = await postChat(limitedURL, limited.key, body);
      expect(second.status).toBe(429);
      expect(JSON.parse(second.text)).toMatchObject({ error: { code: 'rate_limit_exceeded' } });
      open.abort();
      limited.sim.setStream({ chunks: 12, chunksPerSecond: 0 });
      // The slot comes back once the abandoned stream is settled.
      const again = await waitFor(
        () => postChat(limitedURL, limited.key, body),
        (a) => a.status !== 429,
      );
      expectCleanStream(again, 'prov-deepseek');
      expect(
        await waitFor(
          () => limited.server.store.openHoldsNano(limited.accountId),
          (n) => n === 0,
        ),
      ).toBe(0);
      expect((await limited.server.store.ledgerCheck()).ok).toBe(true);
    } finally {
      await limited.close();
    }
  });
});

describe('with STREAMING off (the default)', () => {
  let off: Harness;
  beforeAll(async () => {
    off = await startHarness();
  });
  afterAll(async () => {
    await off.close();
  });

  it.each(PROVIDERS)(
    'stream: true to %s is 400 streaming_not_supported, with no upstream call or charge',
    async (provider, slug) => {
      const res = await off.chat({
        model: provider,
        messages: message('Hello'),
        stream: true,
      });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({
        code: 'streaming_not_supported',
        type: 'invalid_request_error',
        param: 'stream',
      });
      expect(off.sim.requests(slug)).toHaveLength(0);
      expect(await off.balanceNano()).toBe(10_000_000_000);
    },
  );

  it('stream_options without stream: true is 400 invalid_request on stream_options', async () => {
    const res = await off.chat({ messages: message('Hello'), stream_options: { include_usage: true } });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_request', param: 'stream_options' });
  });

  it('/models says streaming: false', async () => {
    const res = await off.server.app.inject({
      method: 'GET',
      url: '/api/v1/models',
      headers: { authorization: `Bearer ${off.key}` },
    });
    expect(res.statusCode).toBe(200);
    expect((res.json() as { streaming: boolean }).streaming).toBe(false);
  });
});
