import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChatRequestValidator } from '../../src/api/validate-chat-request.js';
import { callCostBound, promptSize } from '../../src/billing/estimate.js';
import type { ProviderName } from '../../src/providers/types.js';
import { type Harness, slugOf, startHarness } from '../helpers/harness.js';

/**
 * Property: whatever mix of text, tools, tool calls and results, images and structured output a request
 * carries, on every wire format, what the upstream reports and the gateway charges never exceeds what the
 * hold covered: the bound the billing module computes without a tokenizer (text by its bytes, images by
 * the provider's image bound). The simulator counts each prompt with a real o200k tokenizer and its own
 * per-image amounts, as an upstream would.
 */

const SEED = 36_2026;
const NUM_RUNS = 60;
const PROVIDERS: readonly ProviderName[] = ['prov-qwen', 'prov-claude', 'prov-gemini'];
// A 1×1 PNG.
const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

const textArb = fc.oneof(
  fc.string({ maxLength: 80 }),
  fc.string({ unit: 'grapheme', maxLength: 60 }),
  fc.constantFrom('What is the weather in Paris?', 'aaaaaaaaaaaaaaaaaaaaaaaa', '数据 ✓ émoji 🎉'),
);
const nonEmptyText = textArb.filter((t) => t.trim().length > 0);

const toolArb = fc.record({
  name: fc.constantFrom('get_weather', 'get_time', 'lookup', 'search_docs'),
  description: fc.option(textArb, { nil: undefined }),
  props: fc.uniqueArray(fc.constantFrom('city', 'query', 'limit', 'unit'), { maxLength: 3 }),
});

const requestArb = fc.record({
  provider: fc.constantFrom(...PROVIDERS),
  system: fc.option(nonEmptyText, { nil: undefined }),
  turns: fc.array(fc.tuple(nonEmptyText, nonEmptyText), { maxLength: 3 }),
  question: nonEmptyText,
  images: fc.integer({ min: 0, max: 2 }),
  tools: fc.uniqueArray(toolArb, { maxLength: 3, selector: (t) => t.name }),
  toolRound: fc.boolean(),
  toolResult: textArb,
  json: fc.constantFrom('none', 'json_schema'),
  maxTokens: fc.integer({ min: 16, max: 400 }),
});

type GenRequest = typeof requestArb extends fc.Arbitrary<infer T> ? T : never;

function bodyOf(r: GenRequest): Record<string, unknown> {
  const messages: Record<string, unknown>[] = [];
  if (r.system !== undefined) messages.push({ role: 'system', content: r.system });
  for (const [q, a] of r.turns) {
    messages.push({ role: 'user', content: q });
    messages.push({ role: 'assistant', content: a });
  }
  const parts: Record<string, unknown>[] = [{ type: 'text', text: r.question }];
  for (let i = 0; i < r.images; i++) {
    parts.push({ type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } });
  }
  messages.push({ role: 'user', content: r.images > 0 ? parts : r.question });
  const tools = r.tools.map((t) => ({
    type: 'function',
    function: {
      name: t.name,
      ...(t.description === undefined ? {} : { description: t.description }),
      parameters: {
        type: 'object',
        properties: Object.fromEntries(t.props.map((p) => [p, { type: 'string' }])),
        required: t.props,
      },
    },
  }));
  const first = r.tools[0];
  if (r.toolRound && first !== undefined) {
    messages.push({
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'call_1', type: 'function', function: { name: first.name, arguments: '{"city":"Oslo"}' } },
      ],
    });
    messages.push({ role: 'tool', tool_call_id: 'call_1', content: r.toolResult });
  }
  const body: Record<string, unknown> = { provider: r.provider, messages, max_tokens: r.maxTokens };
  if (tools.length > 0) body.tools = tools;
  if (r.json === 'json_schema') {
    body.response_format = {
      type: 'json_schema',
      json_schema: {
        name: 'answer',
        schema: { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] },
      },
    };
  }
  return body;
}

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ credit: '1000' });
});
afterAll(async () => {
  await h.close();
});

describe('the hold bounds the charge', () => {
  it(
    `for ${NUM_RUNS} random mixes of text, tools and images on three wire formats (seed ${SEED})`,
    {
      timeout: 300_000,
    },
    async () => {
      const validate = createChatRequestValidator(h.config);
      let served = 0;
      await fc.assert(
        fc.asyncProperty(requestArb, async (r) => {
          const body = bodyOf(r);
          const request = validate(body);
          const provider = h.config.providers[r.provider];
          const bound = callCostBound(
            provider,
            {
              prompt: promptSize(request),
              requestedMaxTokens: r.maxTokens,
              minCompletionTokens: 16,
              choices: 1,
            },
            r.maxTokens,
          );
          const res = await h.chat(body);
          expect(res.status, JSON.stringify(res.body)).toBe(200);
          served++;
          const meta = res.body.meta as { cost: { total: number } };
          const usage = res.body.usage as { prompt_tokens: number };
          const charged = Math.round(meta.cost.total * 1e9);
          expect(charged).toBeGreaterThan(0);
          expect(charged).toBeLessThanOrEqual(bound);
          // The simulator counted this prompt itself: its count stays within the byte bound.
          const sent = h.sim.requests(slugOf(r.provider)).at(-1);
          expect(sent).toBeDefined();
          expect(usage.prompt_tokens).toBeLessThanOrEqual(
            promptSize(request).tokens + promptSize(request).images * provider.imageTokens,
          );
        }),
        { numRuns: NUM_RUNS, seed: SEED },
      );
      expect(served).toBeGreaterThanOrEqual(NUM_RUNS);
      const report = await h.server.store.ledgerCheck();
      expect(report.problems).toEqual([]);
      expect(await h.server.store.openHoldsNano(h.accountId)).toBe(0);
    },
  );
});
