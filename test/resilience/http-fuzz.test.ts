import fc from 'fast-check';
import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/harness.js';

/**
 * A seeded, bounded fuzz of the whole HTTP surface — `/api/v1/*`, `/dashboard/api/*`, the static routes,
 * health and metrics — with random methods, paths (percent-encodings good and bad, query strings),
 * headers and bodies (random JSON, mutated chat requests, deep nesting, text). Whatever arrives: never a
 * 500, every error answer in the documented `{error:{message,type,code}}` shape, and the ledger clean after.
 */

const SEED = 37_2026;
const NUM_RUNS = 3_000;

const ROUTES = [
  '/api/v1/chat/completions',
  '/api/v1/models',
  '/api/v1/models/deepseek-chat',
  '/api/v1/models/openai/gpt-oss-120b',
  '/api/v1/key',
  '/api/v1/openapi.json',
  '/dashboard/api/session',
  '/dashboard/api/login',
  '/dashboard/api/logout',
  '/dashboard/api/signup',
  '/dashboard/api/keys',
  '/dashboard/api/usage',
  '/dashboard/api/usage/daily',
  '/dashboard/api/admin/accounts',
  '/',
  '/index.html',
  '/assets/app.js',
  '/healthz',
  '/readyz',
  '/metrics',
];

const segmentArb = fc.oneof(
  fc.string({ maxLength: 12 }).map(encodeURIComponent),
  fc.constantFrom('%25', '%E0%A4%A', '%zz', '%00', '%2F', '..', '%2e%2e', '%C0%AF', '~', ';x=1'),
);
const queryArb = fc.option(
  fc
    .array(
      fc.tuple(
        fc.constantFrom('invite', 'api_key', 'limit', 'before', 'x', '%zz'),
        fc.string({ maxLength: 10 }),
      ),
      {
        maxLength: 3,
      },
    )
    .map((pairs) => `?${pairs.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&')}`),
  { nil: '' },
);
const pathArb = fc
  .tuple(
    fc.oneof(
      { arbitrary: fc.constantFrom(...ROUTES), weight: 4 },
      { arbitrary: fc.constant('/api/v1/chat/completions'), weight: 4 },
      {
        arbitrary: fc
          .tuple(fc.constantFrom(...ROUTES), fc.array(segmentArb, { minLength: 1, maxLength: 3 }))
          .map(([base, segs]) => `${base}/${segs.join('/')}`),
        weight: 2,
      },
    ),
    queryArb,
  )
  .map(([p, q]) => p + q);

const messageArb = fc.oneof(
  fc.record({
    role: fc.constantFrom('system', 'developer', 'user', 'assistant', 'tool', 'robot'),
    content: fc.string(),
  }),
  fc.record({
    role: fc.constantFrom('user', 'assistant'),
    content: fc.array(
      fc.oneof(
        fc.record({ type: fc.constant('text'), text: fc.string() }),
        fc.record({
          type: fc.constant('image_url'),
          image_url: fc.record({
            url: fc.oneof(fc.string(), fc.constant('data:image/png;base64,iVBORw0KGgo=')),
          }),
        }),
        fc.jsonValue(),
      ),
      { maxLength: 3 },
    ),
  }),
  fc.record({
    role: fc.constant('assistant'),
    content: fc.constant(null),
    tool_calls: fc.array(
      fc.record({
        id: fc.string({ maxLength: 8 }),
        type: fc.constant('function'),
        function: fc.record({
          name: fc.constantFrom('f', 'get_weather', 'bad name'),
          arguments: fc.string(),
        }),
      }),
      { maxLength: 2 },
    ),
  }),
  fc.record({ role: fc.constant('tool'), tool_call_id: fc.string({ maxLength: 8 }), content: fc.string() }),
  fc.jsonValue(),
);

const chatBodyArb = fc.record(
  {
    messages: fc.oneof(fc.array(messageArb, { maxLength: 4 }), fc.jsonValue()),
    model: fc.oneof(
      fc.constantFrom('auto', 'prov-qwen', 'prov-claude', 'prov-gemini', 'nope'),
      fc.jsonValue(),
    ),
    provider: fc.oneof(fc.constantFrom('prov-deepseek', 'prov-mistral', 'bad'), fc.jsonValue()),
    max_tokens: fc.oneof(fc.integer({ min: -5, max: 300 }), fc.jsonValue()),
    stream: fc.oneof(fc.boolean(), fc.jsonValue()),
    n: fc.oneof(fc.integer({ min: 0, max: 10 }), fc.jsonValue()),
    tools: fc.oneof(
      fc.constant([{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }]),
      fc.jsonValue(),
    ),
    tool_choice: fc.oneof(fc.constantFrom('auto', 'required', 'none'), fc.jsonValue()),
    response_format: fc.oneof(fc.constant({ type: 'json_object' }), fc.jsonValue()),
    logprobs: fc.jsonValue(),
    temperature: fc.oneof(fc.double(), fc.jsonValue()),
  },
  { requiredKeys: [] },
);

const bodyArb = fc.oneof(
  { arbitrary: chatBodyArb.map((b) => JSON.stringify(b)), weight: 5 },
  { arbitrary: fc.jsonValue().map((v) => JSON.stringify(v)), weight: 2 },
  { arbitrary: fc.string({ maxLength: 40 }), weight: 1 },
  {
    arbitrary: fc.integer({ min: 60, max: 5_000 }).map((n) => `${'['.repeat(n)}1${']'.repeat(n)}`),
    weight: 1,
  },
  { arbitrary: fc.constant(undefined), weight: 1 },
);

type Case = {
  method: InjectOptions['method'];
  path: string;
  auth: 'none' | 'valid' | 'random' | 'bearer-random';
  random: string;
  contentType: string | undefined;
  idempotencyKey: string | undefined;
  requestId: string | undefined;
  body: string | undefined;
};

const randomCaseArb: fc.Arbitrary<Case> = fc.record({
  method: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'),
  path: pathArb,
  auth: fc.constantFrom('none', 'valid', 'valid', 'random', 'bearer-random'),
  random: fc.string({ maxLength: 40 }),
  contentType: fc.option(
    fc.constantFrom(
      'application/json',
      'application/json; charset=utf-8',
      'text/plain',
      'application/x-www-form-urlencoded',
      '',
      'application/json; charset=latin1',
    ),
    { nil: undefined },
  ),
  idempotencyKey: fc.option(fc.string({ maxLength: 20 }), { nil: undefined }),
  requestId: fc.option(fc.string({ maxLength: 20 }), { nil: undefined }),
  body: bodyArb,
});

/** A valid chat request, from a valid key, carrying deep nesting somewhere the schema does not look. */
const deepChatArb: fc.Arbitrary<Case> = fc
  .record({
    depth: fc.integer({ min: 60, max: 100_000 }),
    idempotencyKey: fc.option(fc.uuid(), { nil: undefined }),
  })
  .map(({ depth, idempotencyKey }) => ({
    method: 'POST' as const,
    path: '/api/v1/chat/completions',
    auth: 'valid' as const,
    random: '',
    contentType: 'application/json',
    idempotencyKey,
    requestId: undefined,
    body: `{"messages":[{"role":"user","content":"hi"}],"metadata_extra":${'['.repeat(depth)}1${']'.repeat(depth)}}`,
  }));

const caseArb = fc.oneof({ arbitrary: randomCaseArb, weight: 19 }, { arbitrary: deepChatArb, weight: 1 });

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ credit: '1000' });
});
afterAll(async () => {
  await h.close();
});

/** Header values the HTTP layer can carry (no control characters). */
function headerSafe(value: string): string {
  return value.replace(/[^\x20-\x7e]/g, '_');
}

describe('a fuzz of the HTTP surface', () => {
  it(
    `${NUM_RUNS} random requests (seed ${SEED}): no 500, every error in the spec's shape, ledger clean`,
    {
      timeout: 300_000,
    },
    async () => {
      const statuses = new Map<number, number>();
      await fc.assert(
        fc.asyncProperty(caseArb, async (c) => {
          const headers: Record<string, string> = {};
          if (c.auth === 'valid') headers.authorization = `Bearer ${h.key}`;
          if (c.auth === 'random') headers.authorization = headerSafe(c.random);
          if (c.auth === 'bearer-random') headers.authorization = `Bearer ${headerSafe(c.random)}`;
          if (c.contentType !== undefined) headers['content-type'] = c.contentType;
          if (c.idempotencyKey !== undefined) headers['idempotency-key'] = headerSafe(c.idempotencyKey);
          if (c.requestId !== undefined) headers['x-request-id'] = headerSafe(c.requestId);
          const withBody = c.body !== undefined && c.method !== 'GET' && c.method !== 'HEAD';
          const res = await h.server.app.inject({
            method: c.method,
            url: c.path,
            headers,
            ...(withBody ? { payload: c.body } : {}),
          });
          statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
          expect(res.statusCode, `${c.method} ${c.path} → ${res.body.slice(0, 300)}`).not.toBe(500);
          expect(res.statusCode).toBeLessThan(600);
          if (res.statusCode >= 400 && c.method !== 'HEAD') {
            expect(String(res.headers['content-type'])).toMatch(/^application\/json/);
            const body = JSON.parse(res.body) as { error?: Record<string, unknown> };
            expect(body.error, res.body).toBeDefined();
            expect(typeof body.error?.message).toBe('string');
            expect(typeof body.error?.type).toBe('string');
            expect(typeof body.error?.code).toBe('string');
          }
        }),
        { numRuns: NUM_RUNS, seed: SEED },
      );
      const report = await h.server.store.ledgerCheck();
      expect(report.problems).toEqual([]);
      expect(await h.server.store.openHoldsNano(h.accountId)).toBe(0);
      // Wide enough to mean something: successes and many kinds of refusal.
      expect(statuses.get(200) ?? 0).toBeGreaterThan(50);
      expect([...statuses.keys()].filter((s) => s >= 400).length).toBeGreaterThanOrEqual(4);
      console.log(
        `http fuzz: ${NUM_RUNS} cases, statuses ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`,
      );
    },
  );
});
