import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/harness.js';

/**
 * Upstream answers shaped to hurt the gateway, through the whole stack: a choice numbered 2,000,000 or
 * 4,000,000,000 (the gateway used to walk, or keep, every number below it: seconds to a frozen process),
 * and tool call arguments, `input` or log probabilities nested 20,000 levels deep (a 500 from a stack
 * overflow). Each is the upstream's fault: 502 `provider_error`, nothing charged, the ledger consistent —
 * plain and streamed (before the first delta, as for any unreadable answer).
 */

const DEEP_LEVELS = 20_000;
const HUGE_INDEXES = [2_000_000, 4_000_000_000] as const;

/** What the fake upstream answers next: one JSON body, or the data of each event of a stream. */
let reply: { json: string } | { events: string[] } = { json: '{}' };
let upstream: Server;
let h: Harness;

function deepText(levels = DEEP_LEVELS): string {
  return `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
}

/** `template` as JSON text with the string `"DEEP"` replaced by a 20,000-level object. */
function withDeep(template: unknown): string {
  return JSON.stringify(template).replace('"DEEP"', deepText());
}

beforeAll(async () => {
  upstream = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if ('json' in reply) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(reply.json);
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(reply.events.map((data) => `data: ${data}\n\n`).join(''));
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  h = await startHarness({
    env: {
      STREAMING: 'on',
      CIRCUIT_MIN_REQUESTS: '10000',
      PROV_DEEPSEEK_BASE_URL: `${base}/v1`,
      PROV_CLAUDE_BASE_URL: base,
      PROV_GEMINI_BASE_URL: base,
    },
  });
});
afterAll(async () => {
  await h.close();
  await new Promise((resolve) => upstream.close(resolve));
});

/** Sends `body` and checks the answer is 502 provider_error with nothing charged and the ledger clean. */
async function expectUpstreamFault(body: Record<string, unknown>): Promise<void> {
  const before = await h.balanceNano();
  const res = await h.chat({ max_tokens: 50, messages: [{ role: 'user', content: 'Hi' }], ...body });
  expect(res.status).toBe(502);
  expect((res.body as { error?: { code: string } }).error?.code).toBe('provider_error');
  expect(await h.balanceNano()).toBe(before);
  expect(await h.server.store.openHoldsNano(h.accountId)).toBe(0);
  const report = await h.server.store.ledgerCheck();
  expect(report.problems).toEqual([]);
  expect(report.ok).toBe(true);
}

function openaiChunk(choices: unknown[]): Record<string, unknown> {
  return { id: 'c1', object: 'chat.completion.chunk', model: 'deepseek-chat', choices };
}

const usage = { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 };

describe('a choice numbered far beyond n is an upstream fault (502), never a walk of the gap', () => {
  it.each(HUGE_INDEXES)('openai-compatible, plain, choices[].index %i', async (index) => {
    reply = {
      json: JSON.stringify({
        id: 'c1',
        object: 'chat.completion',
        choices: [{ index, message: { content: 'hi' }, finish_reason: 'stop' }],
        usage,
      }),
    };
    await expectUpstreamFault({ provider: 'prov-deepseek' });
  });

  it.each(HUGE_INDEXES)('openai-compatible, streamed, choices[].index %i', async (index) => {
    reply = {
      events: [
        JSON.stringify(openaiChunk([{ index, delta: { content: 'hi' }, finish_reason: 'stop' }])),
        JSON.stringify({ ...openaiChunk([]), usage }),
        '[DONE]',
      ],
    };
    await expectUpstreamFault({ provider: 'prov-deepseek', stream: true });
  });

  it.each(HUGE_INDEXES)('openai-compatible, streamed, tool_calls[].index %i', async (index) => {
    const piece = { index, id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } };
    reply = {
      events: [
        JSON.stringify(
          openaiChunk([{ index: 0, delta: { tool_calls: [piece] }, finish_reason: 'tool_calls' }]),
        ),
        '[DONE]',
      ],
    };
    await expectUpstreamFault({ provider: 'prov-deepseek', stream: true });
  });

  it.each(HUGE_INDEXES)('gemini, plain and streamed, candidates[].index %i', async (index) => {
    const answer = {
      candidates: [{ index, content: { role: 'model', parts: [{ text: 'hi' }] }, finishReason: 'STOP' }],
      usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 1, totalTokenCount: 4 },
    };
    reply = { json: JSON.stringify(answer) };
    await expectUpstreamFault({ provider: 'prov-gemini' });
    reply = { events: [JSON.stringify(answer)] };
    await expectUpstreamFault({ provider: 'prov-gemini', stream: true });
  });

  it.each(HUGE_INDEXES)('anthropic, streamed, content block index %i', async (index) => {
    reply = {
      events: [
        JSON.stringify({ type: 'message_start', message: { model: 'claude', usage: { input_tokens: 3 } } }),
        JSON.stringify({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } }),
        JSON.stringify({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: 'hi' } }),
      ],
    };
    await expectUpstreamFault({ provider: 'prov-claude', stream: true });
  });
});

const toolCallAnswer = {
  id: 'c1',
  object: 'chat.completion',
  choices: [
    {
      index: 0,
      message: {
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: 'DEEP' } }],
      },
      finish_reason: 'tool_calls',
    },
  ],
  usage,
};
const geminiCallAnswer = {
  candidates: [
    {
      content: { role: 'model', parts: [{ functionCall: { name: 'f', args: 'DEEP' } }] },
      finishReason: 'STOP',
    },
  ],
  usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 1, totalTokenCount: 4 },
};
const claudeToolUse = { type: 'tool_use', id: 'toolu_1', name: 'f', input: 'DEEP' };

const DEEP_CASES: { name: string; body: Record<string, unknown>; reply: () => typeof reply }[] = [
  {
    name: 'openai-compatible tool call arguments, plain',
    body: { provider: 'prov-deepseek' },
    reply: () => ({ json: withDeep(toolCallAnswer) }),
  },
  {
    name: 'openai-compatible tool call arguments, streamed',
    body: { provider: 'prov-deepseek', stream: true },
    reply: () => ({
      events: [
        withDeep(
          openaiChunk([
            {
              index: 0,
              delta: { tool_calls: [{ index: 0, id: 'call_1', function: { name: 'f', arguments: 'DEEP' } }] },
              finish_reason: 'tool_calls',
            },
          ]),
        ),
        JSON.stringify({ ...openaiChunk([]), usage }),
        '[DONE]',
      ],
    }),
  },
  {
    name: 'openai-compatible logprobs, plain',
    body: { provider: 'prov-deepseek', logprobs: true },
    reply: () => ({
      json: withDeep({
        ...toolCallAnswer,
        choices: [
          { index: 0, message: { content: 'hi' }, logprobs: { content: ['DEEP'] }, finish_reason: 'stop' },
        ],
      }),
    }),
  },
  {
    name: 'openai-compatible logprobs, streamed',
    body: { provider: 'prov-deepseek', logprobs: true, stream: true },
    reply: () => ({
      events: [
        withDeep(
          openaiChunk([
            { index: 0, delta: { content: 'hi' }, logprobs: { content: ['DEEP'] }, finish_reason: 'stop' },
          ]),
        ),
        JSON.stringify({ ...openaiChunk([]), usage }),
        '[DONE]',
      ],
    }),
  },
  {
    name: 'gemini functionCall args, plain',
    body: { provider: 'prov-gemini' },
    reply: () => ({ json: withDeep(geminiCallAnswer) }),
  },
  {
    name: 'gemini functionCall args, streamed',
    body: { provider: 'prov-gemini', stream: true },
    reply: () => ({ events: [withDeep(geminiCallAnswer)] }),
  },
  {
    name: 'anthropic tool_use input, plain',
    body: { provider: 'prov-claude' },
    reply: () => ({
      json: withDeep({
        id: 'msg_1',
        type: 'message',
        role: 'assistant',
        model: 'claude',
        content: [claudeToolUse],
        stop_reason: 'tool_use',
        usage: { input_tokens: 3, output_tokens: 1 },
      }),
    }),
  },
  {
    name: 'anthropic tool_use input, streamed',
    body: { provider: 'prov-claude', stream: true },
    reply: () => ({
      events: [
        JSON.stringify({ type: 'message_start', message: { model: 'claude', usage: { input_tokens: 3 } } }),
        withDeep({ type: 'content_block_start', index: 0, content_block: claudeToolUse }),
        JSON.stringify({ type: 'content_block_stop', index: 0 }),
        JSON.stringify({
          type: 'message_delta',
          delta: { stop_reason: 'tool_use' },
          usage: { output_tokens: 1 },
        }),
        JSON.stringify({ type: 'message_stop' }),
      ],
    }),
  },
];

describe(`an answer nested ${DEEP_LEVELS} levels deep is an upstream fault (502), never a 500`, () => {
  it.each(DEEP_CASES)('$name', async ({ body, reply: make }) => {
    reply = make();
    await expectUpstreamFault(body);
  });
});

describe('a past tool call nested too deep is refused before the call (400), never a 500', () => {
  it.each(['prov-claude', 'prov-gemini'])('%s', async (provider) => {
    const res = await h.chat({
      provider,
      max_tokens: 50,
      messages: [
        { role: 'user', content: 'Hi' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: deepText() } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'done' },
      ],
    });
    expect(res.status).toBe(400);
    expect((res.body as { error?: { code: string } }).error?.code).toBe('unsupported_parameter');
  });
});
