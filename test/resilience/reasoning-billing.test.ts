import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { Agent, fetch as undiciFetch } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { TokenCounter } from '../../src/gateway/token-counter.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import {
  type Script,
  type ScriptedUpstream,
  sseEvent,
  startScriptedUpstream,
} from '../helpers/scripted-upstream.js';

/**
 * What a call is billed when the upstream's usage cannot say: a stream cut or left by its client, an
 * upstream that reports no usage. Everything the upstream generated counts — its reasoning (DeepSeek's
 * `reasoning_content`, Claude's thinking, signed and redacted thinking by its size) as well as the text —
 * never above the completion cap sent nor the hold; a client that leaves before the first visible piece
 * pays for the prompt the upstream read and the reasoning it wrote. prov-deepseek (OpenAI-compatible) and
 * prov-claude (Anthropic) point at a scripted upstream on loopback; every money check reads the store.
 */

let h: Harness;
let url: string;
let up: ScriptedUpstream;

/** Reasoning pieces the upstream streams before its answer, and the visible pieces the client reads. */
const REASONING_PIECES = 3000;
const VISIBLE_PIECES = 30;
const WORDS = [' think', ' about', ' the', ' problem', ' carefully', ' and', ' check', ' each', ' step'];
const reasoningPieces = Array.from({ length: REASONING_PIECES }, (_, i) => WORDS[i % WORDS.length] as string);
const REASONING_TEXT = reasoningPieces.join('');
const REASONING_TOKENS = countTokens(REASONING_TEXT);
/** Opaque reasoning (signatures, redacted thinking) counts a token per 4 characters (docs/api.md). */
const OPAQUE_CHARS_PER_TOKEN = 4;
const SIGNATURE = 'S'.repeat(400);
const REDACTED = 'R'.repeat(4000);
const OPAQUE_TOKENS = Math.ceil((SIGNATURE.length + REDACTED.length) / OPAQUE_CHARS_PER_TOKEN);

beforeAll(async () => {
  up = await startScriptedUpstream();
  h = await startHarness({
    credit: '10',
    env: {
      STREAMING: 'on',
      TOKENIZER_PRELOAD: 'true',
      // Past this, UTF-8 bytes stand in for a count: far beyond an ordinary text, far below what the
      // tokenizer takes on 100,000 'a's.
      TOKEN_COUNT_TIMEOUT_MS: '1500',
      BODY_LIMIT_BYTES: String(2 * 1024 * 1024),
      PROV_DEEPSEEK_BASE_URL: up.url,
      PROV_CLAUDE_BASE_URL: up.url,
      CIRCUIT_MIN_REQUESTS: '10000',
    },
  });
  url = await h.server.listen();
});
afterEach(() => {
  vi.restoreAllMocks();
  up.reset();
});
afterAll(async () => {
  await h?.close();
  await up?.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Time left to the gateway to read the events the upstream has written before the client leaves. */
const PARSE_MS = 1000;

async function waitFor<T>(read: () => T | Promise<T>, done: (value: T) => boolean, ms = 20_000): Promise<T> {
  const until = Date.now() + ms;
  let value = await read();
  while (!done(value) && Date.now() < until) {
    await sleep(25);
    value = await read();
  }
  return value;
}

function openaiChunk(delta: Record<string, unknown>, finish: string | null = null): string {
  return sseEvent({
    id: 'chatcmpl-scripted',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'deepseek-reasoner',
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
}

function claudeEvent(data: Record<string, unknown>): string {
  return sseEvent(data, data.type as string);
}

/** DeepSeek-style: the reasoning in `reasoning_content` pieces, then `visible` answer pieces. */
function deepseekStream(visible: number, end: boolean): Script {
  const events = [openaiChunk({ role: 'assistant', content: '' })];
  for (const piece of reasoningPieces) events.push(openaiChunk({ reasoning_content: piece }));
  for (let i = 0; i < visible; i++) events.push(openaiChunk({ content: ' piece' }));
  if (end) events.push(openaiChunk({}, 'stop'), sseEvent('[DONE]'));
  return { kind: 'sse', events, end };
}

/**
 * Claude-style: `message_start` with the prompt's tokens and an `output_tokens` of 1, a thinking block
 * (the reasoning pieces, then its signature), a redacted thinking block, then `visible` text pieces.
 */
function claudeStream(promptTokens: number, visible: number): Script {
  const events = [
    claudeEvent({
      type: 'message_start',
      message: {
        id: 'msg_scripted',
        type: 'message',
        role: 'assistant',
        model: 'claude-sonnet-4-5',
        content: [],
        stop_reason: null,
        usage: { input_tokens: promptTokens, output_tokens: 1 },
      },
    }),
    claudeEvent({
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'thinking', thinking: '', signature: '' },
    }),
  ];
  for (const thinking of reasoningPieces) {
    events.push(
      claudeEvent({ type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking } }),
    );
  }
  events.push(
    claudeEvent({
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'signature_delta', signature: SIGNATURE },
    }),
    claudeEvent({ type: 'content_block_stop', index: 0 }),
    claudeEvent({
      type: 'content_block_start',
      index: 1,
      content_block: { type: 'redacted_thinking', data: REDACTED },
    }),
    claudeEvent({ type: 'content_block_stop', index: 1 }),
  );
  if (visible > 0) {
    events.push(
      claudeEvent({ type: 'content_block_start', index: 2, content_block: { type: 'text', text: '' } }),
    );
    for (let i = 0; i < visible; i++) {
      events.push(
        claudeEvent({ type: 'content_block_delta', index: 2, delta: { type: 'text_delta', text: ' piece' } }),
      );
    }
  }
  return { kind: 'sse', events, end: false };
}

/** Posts a streamed request over a real socket; `leave()` closes it from the client's side. */
function openStream(key: string, body: unknown) {
  const controller = new AbortController();
  const agent = new Agent();
  const response = undiciFetch(`${url}/api/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: controller.signal,
    dispatcher: agent,
  });
  response.catch(() => undefined);
  return {
    /** Reads until `pieces` visible pieces came; the status of the answer. */
    async read(pieces: number): Promise<number> {
      const res = await response;
      const reader = (res.body as unknown as ReadableStream<Uint8Array>).getReader();
      const decoder = new TextDecoder();
      let text = '';
      while ((text.match(/"content":" piece"/g) ?? []).length < pieces) {
        const next = await reader.read();
        if (next.done) break;
        text += decoder.decode(next.value, { stream: true });
      }
      return res.status;
    },
    async leave(): Promise<void> {
      controller.abort();
      await agent.destroy();
    },
  };
}

/** Waits until the account's hold is settled; its newest usage row and what it was charged. */
async function settled(accountId: string, before: number) {
  expect(
    await waitFor(
      () => h.server.store.openHoldsNano(accountId),
      (n) => n === 0,
    ),
  ).toBe(0);
  const [row] = await h.server.store.listUsage(accountId, { limit: 1 });
  if (row === undefined) throw new Error('no usage row');
  const charge = before - (await h.balanceNano(accountId));
  expect(row.inputCostNano + row.outputCostNano).toBe(charge);
  const report = await h.server.store.ledgerCheck({ shortfallAllowanceNano: 0 });
  expect(report.problems).toEqual([]);
  expect(report.ok).toBe(true);
  return { row, charge };
}

/** The hold an account has open, once one is (read while its call runs). */
function holdOf(accountId: string): Promise<number> {
  return waitFor(
    () => h.server.store.openHoldsNano(accountId),
    (n) => n > 0,
  );
}

const ask = (provider: string, maxTokens: number, stream: boolean, content = 'Think hard, then answer') => ({
  model: provider,
  max_tokens: maxTokens,
  stream,
  messages: [{ role: 'user', content }],
});

describe('a client that reads 30 visible pieces of an answer after 3,000 reasoning pieces, then leaves', () => {
  it('prov-deepseek (reasoning_content, no usage): billed the reasoning too, within the hold', async () => {
    const { accountId, key } = await h.newAccount('10');
    up.answer(deepseekStream(200, false));
    const before = await h.balanceNano(accountId);
    const open = openStream(key, ask('prov-deepseek', 8000, true));
    const hold = await holdOf(accountId);
    expect(await open.read(VISIBLE_PIECES)).toBe(200);
    await open.leave();
    const { row, charge } = await settled(accountId, before);
    expect(row).toMatchObject({
      provider: 'prov-deepseek',
      status: 'ok',
      clientGone: true,
      usageEstimated: true,
    });
    expect(row.completionTokens).toBeGreaterThanOrEqual(REASONING_TOKENS + VISIBLE_PIECES);
    expect(row.completionTokens).toBeLessThanOrEqual(8000);
    expect(charge).toBeGreaterThan(0);
    expect(charge).toBeLessThanOrEqual(hold);
  });

  it('prov-claude (thinking, its signature and a redacted block; output_tokens stays 1): billed all of it', async () => {
    const { accountId, key } = await h.newAccount('10');
    up.answer(claudeStream(20, 200));
    const before = await h.balanceNano(accountId);
    const open = openStream(key, ask('prov-claude', 8000, true));
    const hold = await holdOf(accountId);
    expect(await open.read(VISIBLE_PIECES)).toBe(200);
    await open.leave();
    const { row, charge } = await settled(accountId, before);
    expect(row).toMatchObject({ provider: 'prov-claude', status: 'ok', clientGone: true, promptTokens: 20 });
    expect(row.completionTokens).toBeGreaterThanOrEqual(REASONING_TOKENS + OPAQUE_TOKENS + VISIBLE_PIECES);
    expect(row.completionTokens).toBeLessThanOrEqual(8000);
    // Claude bills $15 per million output tokens: the reasoning alone is over $0.045.
    expect(row.outputCostNano).toBeGreaterThanOrEqual(45_000_000);
    expect(charge).toBeLessThanOrEqual(hold);
  });
});

describe('an upstream that reports no usage, with reasoning', () => {
  it('streamed to the end: the reasoning is counted with the answer', async () => {
    const { accountId, key } = await h.newAccount('10');
    up.answer(deepseekStream(30, true));
    const before = await h.balanceNano(accountId);
    const res = await fetch(`${url}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(ask('prov-deepseek', 8000, true)),
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('[DONE]');
    const { row } = await settled(accountId, before);
    expect(row).toMatchObject({ status: 'ok', clientGone: false, usageEstimated: true });
    expect(row.completionTokens).toBeGreaterThanOrEqual(REASONING_TOKENS + 30);
    expect(row.completionTokens).toBeLessThanOrEqual(8000);
  });

  it.each([
    [
      'prov-deepseek',
      {
        id: 'chatcmpl-plain',
        object: 'chat.completion',
        created: 1,
        model: 'deepseek-reasoner',
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: 'The answer.', reasoning_content: REASONING_TEXT },
            finish_reason: 'stop',
          },
        ],
      },
      REASONING_TOKENS,
    ],
    [
      'prov-claude',
      {
        id: 'msg_plain',
        type: 'message',
        role: 'assistant',
        model: 'claude-sonnet-4-5',
        content: [
          { type: 'thinking', thinking: REASONING_TEXT, signature: SIGNATURE },
          { type: 'redacted_thinking', data: REDACTED },
          { type: 'text', text: 'The answer.' },
        ],
        stop_reason: 'end_turn',
      },
      REASONING_TOKENS + OPAQUE_TOKENS,
    ],
  ] as const)('%s, a plain answer: billed its reasoning', async (provider, body, reasoning) => {
    const { accountId, key } = await h.newAccount('10');
    up.answer({ kind: 'json', body });
    const before = await h.balanceNano(accountId);
    const res = await h.chat(ask(provider, 8000, false), { key });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const { row } = await settled(accountId, before);
    expect(row).toMatchObject({ provider, status: 'ok', usageEstimated: true });
    expect(row.completionTokens).toBeGreaterThanOrEqual(reasoning + countTokens('The answer.'));
    expect(row.completionTokens).toBeLessThanOrEqual(8000);
  });
});

describe('a count that falls back to UTF-8 bytes', () => {
  const plainAnswer = (content: string) => ({
    kind: 'json' as const,
    body: {
      id: 'chatcmpl-plain',
      object: 'chat.completion',
      created: 1,
      model: 'deepseek-chat',
      choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
    },
  });

  it('100,000 "a"s (12,500 tokens) with max_tokens 16,000: billed at most 16,000, no shortfall', async () => {
    const content = 'a'.repeat(100_000);
    // Enough for the hold (a short prompt, 16,000 output tokens at $0.42 a million), not for 100,000.
    const { accountId, key } = await h.newAccount('0.01');
    up.answer(plainAnswer(content));
    const before = await h.balanceNano(accountId);
    const res = await h.chat(ask('prov-deepseek', 16_000, false, 'Say a'), { key });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const { row, charge } = await settled(accountId, before);
    expect(row.usageEstimated).toBe(true);
    expect(row.completionTokens).toBeGreaterThanOrEqual(12_500);
    expect(row.completionTokens).toBeLessThanOrEqual(16_000);
    expect(charge).toBeLessThanOrEqual(before);
  });

  it('streamed: the same bound', async () => {
    const { accountId, key } = await h.newAccount('0.01');
    const events = [openaiChunk({ role: 'assistant', content: '' })];
    for (let i = 0; i < 100; i++) events.push(openaiChunk({ content: 'a'.repeat(1000) }));
    events.push(openaiChunk({}, 'stop'), sseEvent('[DONE]'));
    up.answer({ kind: 'sse', events, end: true });
    const before = await h.balanceNano(accountId);
    const res = await fetch(`${url}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(ask('prov-deepseek', 16_000, true, 'Say a')),
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('[DONE]');
    const { row } = await settled(accountId, before);
    expect(row.completionTokens).toBeGreaterThanOrEqual(12_500);
    expect(row.completionTokens).toBeLessThanOrEqual(16_000);
  });

  it('a 3,000-token answer with max_tokens 4,000, while the counter is flooded: billed at most 4,000', async () => {
    // The tokenizer thread busy with another account's texts: every count gets UTF-8 bytes, as it does
    // past its time bound.
    vi.spyOn(TokenCounter.prototype, 'count').mockImplementation((texts: string[]) =>
      Promise.resolve({ counts: texts.map((t) => Buffer.byteLength(t, 'utf8')), exact: false }),
    );
    const content = ' 数据'.repeat(1500);
    const tokens = countTokens(content);
    expect(tokens).toBeGreaterThanOrEqual(1500);
    expect(tokens).toBeLessThanOrEqual(4000);
    expect(Buffer.byteLength(content, 'utf8')).toBeGreaterThan(6000);
    const { accountId, key } = await h.newAccount('10');
    up.answer(plainAnswer(content));
    const before = await h.balanceNano(accountId);
    const res = await h.chat(ask('prov-deepseek', 4000, false), { key });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const { row } = await settled(accountId, before);
    expect(row.completionTokens).toBeGreaterThanOrEqual(tokens);
    expect(row.completionTokens).toBeLessThanOrEqual(4000);
  });
});

describe('a client that leaves before the first visible piece', () => {
  // A 400 KB prompt.
  const prompt = 'Read every line of this long document and weigh it. '.repeat(7600);
  const promptTokens = countTokens(prompt);

  it('prov-claude, after message_start and 3,000 thinking pieces: billed the prompt and the thinking', async () => {
    const { accountId, key } = await h.newAccount('10');
    up.answer(claudeStream(101_266, 0));
    const before = await h.balanceNano(accountId);
    const open = openStream(key, ask('prov-claude', 8000, true, prompt));
    const hold = await holdOf(accountId);
    // Every event written: the thinking has reached the gateway, which has sent the client nothing.
    await waitFor(
      () => up.last()?.written ?? 0,
      (n) => n >= REASONING_PIECES + 6,
    );
    await sleep(PARSE_MS);
    await open.leave();
    const { row, charge } = await settled(accountId, before);
    expect(row).toMatchObject({
      provider: 'prov-claude',
      status: 'ok',
      clientGone: true,
      promptTokens: 101_266,
    });
    // $3 a million input tokens: about $0.30.
    expect(row.inputCostNano).toBeGreaterThanOrEqual(300_000_000);
    expect(row.completionTokens).toBeGreaterThanOrEqual(REASONING_TOKENS + OPAQUE_TOKENS);
    expect(charge).toBeLessThanOrEqual(hold);
    expect(up.last()?.closed).toBe(true);
  });

  it('prov-deepseek (no usage), after 3,000 reasoning pieces: billed the counted prompt and the reasoning', async () => {
    const { accountId, key } = await h.newAccount('10');
    up.answer(deepseekStream(0, false));
    const before = await h.balanceNano(accountId);
    const open = openStream(key, ask('prov-deepseek', 8000, true, prompt));
    const hold = await holdOf(accountId);
    await waitFor(
      () => up.last()?.written ?? 0,
      (n) => n >= REASONING_PIECES + 1,
    );
    await sleep(PARSE_MS);
    await open.leave();
    const { row, charge } = await settled(accountId, before);
    expect(row).toMatchObject({
      provider: 'prov-deepseek',
      status: 'ok',
      clientGone: true,
      usageEstimated: true,
    });
    expect(row.promptTokens).toBeGreaterThanOrEqual(promptTokens);
    expect(row.completionTokens).toBeGreaterThanOrEqual(REASONING_TOKENS);
    expect(charge).toBeLessThanOrEqual(hold);
  });

  it('before the upstream has sent any event: nothing is charged', async () => {
    const { accountId, key } = await h.newAccount('10');
    up.answer({ kind: 'sse', events: [], end: false });
    const before = await h.balanceNano(accountId);
    const open = openStream(key, ask('prov-deepseek', 8000, true));
    await holdOf(accountId);
    // The upstream has answered 200 and sent its headers, nothing more.
    await waitFor(
      () => up.last(),
      (stream) => stream !== undefined,
    );
    await open.leave();
    const { row, charge } = await settled(accountId, before);
    expect(charge).toBe(0);
    expect(row).toMatchObject({ provider: 'prov-deepseek', status: 'error', clientGone: true });
  });
});
