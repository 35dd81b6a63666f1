import { Validator } from '@seriousme/openapi-schema-validator';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOpenApi } from '../../src/api/openapi.js';
import { chatRequestSchema } from '../../src/api/schemas.js';
import { type Harness, hello, startHarness } from '../helpers/harness.js';
import { watchConformance } from '../helpers/openapi-conformance.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

type Doc = Parameters<typeof watchConformance>[1];

describe('GET /api/v1/openapi.json', () => {
  it('is served without a key and is a valid OpenAPI 3.1 document', async () => {
    const res = await h.server.app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const doc = JSON.parse(res.body) as Record<string, unknown>;
    expect(doc.openapi).toBe('3.1.0');
    const validator = new Validator();
    const result = await validator.validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('publishes the very schema the server validates chat requests with, at the configured limits', async () => {
    const res = await h.server.app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
    const doc = JSON.parse(res.body) as { components: { schemas: Record<string, unknown> } };
    expect(doc.components.schemas.ChatCompletionRequest).toEqual(chatRequestSchema(h.config));
    const messages = (
      doc.components.schemas.ChatCompletionRequest as { properties: { messages: { maxItems: number } } }
    ).properties.messages;
    expect(messages.maxItems).toBe(h.config.maxMessages);
  });

  it('documents every path the API routes answer', async () => {
    const doc = buildOpenApi(h.config, '0') as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths).sort()).toEqual(
      [
        '/chat/completions',
        '/credits/redeem',
        '/key',
        '/messages',
        '/messages/count_tokens',
        '/models',
        '/models/{model}',
        '/openapi.json',
        '/responses',
      ].sort(),
    );
  });
});

describe('response conformance (every test harness checks what it sees)', () => {
  it('counts the responses it checks', async () => {
    const before = h.conformance.checked;
    expect((await h.chat(hello)).status).toBe(200);
    expect((await h.chat({ messages: [] })).status).toBe(400);
    expect((await h.chat(hello, { key: 'sk-svc-00000000000000000000000000000000' })).status).toBe(401);
    await h.server.app.inject({
      method: 'GET',
      url: '/api/v1/models',
      headers: { authorization: `Bearer ${h.key}` },
    });
    await h.server.app.inject({
      method: 'GET',
      url: '/api/v1/nowhere',
      headers: { authorization: `Bearer ${h.key}` },
    });
    expect(h.conformance.checked - before).toBe(5);
    expect(h.conformance.violations).toEqual([]);
  });

  it('catches a response that does not match the document', async () => {
    const app = Fastify();
    const seen = watchConformance(app, buildOpenApi(h.config, '0') as unknown as Doc);
    app.get('/api/v1/models', async (_req, reply) =>
      reply.header('x-request-id', 'r1').send({ object: 'list', data: [{ id: 5 }] }),
    );
    app.get('/api/v1/key', async (_req, reply) =>
      reply
        .code(402)
        .header('x-request-id', 'r2')
        .header('x-should-retry', 'false')
        .send({ error: { message: 'x', type: 'y', code: 'insufficient_balance' } }),
    );
    app.get('/api/v1/undocumented', async (_req, reply) =>
      reply.header('x-request-id', 'r3').send({ ok: true }),
    );
    await app.inject({ method: 'GET', url: '/api/v1/models' });
    await app.inject({ method: 'GET', url: '/api/v1/key' });
    await app.inject({ method: 'GET', url: '/api/v1/undocumented' });
    await app.close();
    expect(seen.checked).toBe(3);
    expect(seen.violations).toHaveLength(3);
    expect(seen.violations[0]).toMatch(/^GET \/api\/v1\/models → 200: .*data\/0/);
    expect(seen.violations[1]).toMatch(/GET \/api\/v1\/key → 402: status not documented/);
    expect(seen.violations[2]).toMatch(/undocumented path/);
  });
});
