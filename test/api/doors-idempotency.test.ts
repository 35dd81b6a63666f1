import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/harness.js';

/**
 * Idempotency-Key on the Messages and Responses doors, as on the chat door: a repeat with the same key
 * and body gets the first answer's body again (`idempotent-replayed: true`) with no upstream call and no
 * second charge; the same key on another door's request is a different body (422).
 */

let h: Harness;

beforeAll(async () => {
  h = await startHarness({ env: { STREAMING: 'on' } });
});

afterAll(async () => {
  await h?.close();
});

async function post(path: string, body: unknown, key: string) {
  const res = await h.server.app.inject({
    method: 'POST',
    url: `/api/v1${path}`,
    headers: { 'content-type': 'application/json', 'x-api-key': h.key, 'idempotency-key': key },
    payload: JSON.stringify(body),
  });
  return { status: res.statusCode, headers: res.headers, body: res.body };
}

const calls = () => h.sim.requests('claude').length;

describe('Idempotency-Key on the Messages and Responses doors', () => {
  for (const [door, path, body] of [
    [
      'Messages',
      '/messages',
      { model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'Hi once' }] },
    ],
    ['Responses', '/responses', { model: 'prov-claude', input: 'Hi once' }],
  ] as const) {
    it(`${door}: a replay returns the same body, with no upstream call and no second charge`, async () => {
      const key = `idem-${door}`;
      const first = await post(path, body, key);
      expect(first.status, first.body).toBe(200);
      expect(first.headers['idempotent-replayed']).toBeUndefined();
      const balance = await h.balanceNano();
      const before = calls();
      const again = await post(path, body, key);
      expect(again.status).toBe(200);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body).toBe(first.body);
      expect(calls()).toBe(before);
      expect(await h.balanceNano()).toBe(balance);
      // Another body under the same key is refused.
      const other = await post(path, { ...body, model: 'prov-qwen' }, key);
      expect(other.status).toBe(422);
    });
  }

  it('Responses, streamed: the replay is marked and costs nothing', async () => {
    const body = { model: 'prov-claude', input: 'Stream once', stream: true };
    const first = await post('/responses', body, 'idem-stream');
    expect(first.status).toBe(200);
    expect(first.body).toContain('response.completed');
    const balance = await h.balanceNano();
    const before = calls();
    const again = await post('/responses', body, 'idem-stream');
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toContain('response.completed');
    const idOf = (text: string) => /"id":"(resp_[^"]+)"/.exec(text)?.[1];
    expect(idOf(again.body)).toBe(idOf(first.body));
    expect(calls()).toBe(before);
    expect(await h.balanceNano()).toBe(balance);
  });

  it('one key cannot answer a request of another door', async () => {
    const chat = await h.server.app.inject({
      method: 'POST',
      url: '/api/v1/chat/completions',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${h.key}`,
        'idempotency-key': 'idem-x',
      },
      payload: JSON.stringify({
        model: 'prov-claude',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'Hi' }],
      }),
    });
    expect(chat.statusCode).toBe(200);
    const messages = await post(
      '/messages',
      { model: 'prov-claude', max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }] },
      'idem-x',
    );
    expect(messages.status).toBe(422);
  });
});
