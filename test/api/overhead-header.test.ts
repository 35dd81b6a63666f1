/**
 * `x-tollgate-overhead-ms` (docs/api.md): on every door, plain and streamed, the time spent inside Tollgate
 * without the wait on the upstream — so with an upstream that takes DELAY_MS, well under it — and on
 * refusals made before any upstream call too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/harness.js';

// Long enough that the bound below holds on a busy machine, where Tollgate's own time grows too.
const DELAY_MS = 1_000;
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ simLatencyMs: DELAY_MS, env: { STREAMING: 'on' } });
  // A process's first call also loads and compiles code (counted as overhead, rightly): not timed here.
  await post(doors.chat.url, doors.chat.body);
});
afterAll(async () => {
  await h.close();
});

const doors = {
  chat: { url: '/api/v1/chat/completions', body: { messages: [{ role: 'user', content: 'Hello there' }] } },
  messages: {
    url: '/api/v1/messages',
    body: {
      model: 'claude-sonnet-4-5',
      max_tokens: 200,
      messages: [{ role: 'user', content: 'Hello there' }],
    },
  },
  responses: { url: '/api/v1/responses', body: { input: 'Hello there' } },
};

async function post(url: string, body: unknown, key = h.key) {
  const started = performance.now();
  const res = await h.server.app.inject({
    method: 'POST',
    url,
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      'anthropic-version': '2023-06-01',
    },
    payload: JSON.stringify(body),
  });
  const header = res.headers['x-tollgate-overhead-ms'];
  return { status: res.statusCode, tookMs: performance.now() - started, header };
}

function overheadOf(header: unknown): number {
  expect(header).toMatch(/^\d+\.\d\d$/);
  return Number(header);
}

describe('x-tollgate-overhead-ms', () => {
  for (const [door, { url, body }] of Object.entries(doors)) {
    for (const stream of [false, true]) {
      it(`${door}, ${stream ? 'streamed' : 'plain'}: the time inside Tollgate, without the upstream's`, async () => {
        const res = await post(url, { ...body, ...(stream ? { stream: true } : {}) });
        expect(res.status).toBe(200);
        // The upstream's delay was in the call, and it is not in the header.
        expect(res.tookMs).toBeGreaterThanOrEqual(DELAY_MS);
        const overhead = overheadOf(res.header);
        expect(overhead).toBeGreaterThanOrEqual(0);
        expect(overhead).toBeLessThan(DELAY_MS / 2);
      });
    }
  }

  it('is sent with refusals made before any upstream call', async () => {
    const badKey = await post(doors.chat.url, doors.chat.body, 'sk-svc-not-a-real-key-000000000000');
    expect(badKey.status).toBe(401);
    const badBody = await post(doors.chat.url, { messages: 'not a list' });
    expect(badBody.status).toBe(400);
    for (const res of [badKey, badBody]) expect(overheadOf(res.header)).toBeGreaterThanOrEqual(0);
  });
});
