import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nanoToUsd, tokenCost } from '../../src/money/money.js';
import type { Harness } from '../helpers/harness.js';
import { guardNetwork, startListening } from './compat-helpers.js';

interface Meta {
  provider: string;
  cost: { input: number; output: number; total: number };
  balance: number;
}
type Billed = { meta: Meta; usage: { cost: number } };

const weather: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'Current weather of a city',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
  },
  strict: true,
};

let h: Harness;
let client: OpenAI;
let baseURL: string;
let network: ReturnType<typeof guardNetwork>;
beforeAll(async () => {
  network = guardNetwork();
  ({ h, baseURL } = await startListening({ env: { STREAMING: 'on' } }));
  client = new OpenAI({ apiKey: h.key, baseURL, maxRetries: 0 });
});
afterAll(async () => {
  network.restore();
  await h.close();
});

/** The usage rows of the harness account, newest first. */
async function rows() {
  return h.server.store.listUsage(h.accountId, { limit: 100 });
}

/** The nanodollars of a usage row of the request behind a `resp_…` id. */
async function rowOf(responseId: string) {
  const requestId = `chatcmpl-${responseId.replace(/^resp_/, '')}`;
  const row = (await rows()).find((r) => r.requestId === requestId);
  if (!row) throw new Error(`no usage row for ${responseId}`);
  return row;
}

describe('the official openai SDK on POST /api/v1/responses', () => {
  it('responses.create: a plain response with instructions, its usage and meta, billed exactly', async () => {
    const before = await h.balanceNano();
    const response = await client.responses.create({
      model: 'prov-qwen',
      instructions: 'You are terse.',
      input: 'Tell me about harbors',
      store: false,
    });
    expect(response.object).toBe('response');
    expect(response.id).toMatch(/^resp_/);
    expect(response.status).toBe('completed');
    expect(response.output_text).toMatch(/^Simulated reply from qwen to: Tell me about harbors/);
    expect(response.output[0]).toMatchObject({ type: 'message', role: 'assistant', status: 'completed' });
    const usage = response.usage as OpenAI.Responses.ResponseUsage;
    expect(usage.total_tokens).toBe(usage.input_tokens + usage.output_tokens);
    expect(usage.input_tokens_details.cached_tokens).toBe(0);
    expect(usage.output_tokens_details.reasoning_tokens).toBe(0);
    const { meta } = response as unknown as Billed;
    const qwen = h.config.providers['prov-qwen'];
    expect(meta.provider).toBe('prov-qwen');
    expect(meta.cost.input).toBe(nanoToUsd(tokenCost(usage.input_tokens, qwen.inputPriceNano)));
    expect(meta.cost.output).toBe(nanoToUsd(tokenCost(usage.output_tokens, qwen.outputPriceNano)));
    // Balance fall = the usage row = what the client was told.
    const after = await h.balanceNano();
    const row = await rowOf(response.id);
    expect(before - after).toBe(row.inputCostNano + row.outputCostNano);
    expect(Math.round(meta.cost.total * 1e9)).toBe(before - after);
    expect(Math.round((response as unknown as Billed).usage.cost * 1e9)).toBe(before - after);
    expect(Math.round(meta.balance * 1e9)).toBe(after);
    expect(row.promptTokens).toBe(usage.input_tokens);
    expect(row.completionTokens).toBe(usage.output_tokens);
  });

  it('takes message items with input_text and input_image parts, and developer messages', async () => {
    const png =
      'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
    const response = await client.responses.create({
      model: 'prov-qwen',
      input: [
        { role: 'developer', content: [{ type: 'input_text', text: 'Be brief.' }] },
        {
          type: 'message',
          role: 'user',
          content: [
            { type: 'input_text', text: 'What is in this picture' },
            { type: 'input_image', image_url: png, detail: 'low' },
          ],
        },
      ],
    });
    expect(response.status).toBe('completed');
    expect(response.output_text).toContain('What is in this picture');
  });

  it('stream: true through the SDK stream helper, ending in response.completed with usage and meta', async () => {
    const before = await h.balanceNano();
    const stream = client.responses.stream({ model: 'prov-deepseek', input: 'Tell me about rivers' });
    const types: string[] = [];
    let text = '';
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.output_text.delta') text += event.delta;
    }
    const final = await stream.finalResponse();
    expect(types[0]).toBe('response.created');
    expect(types[1]).toBe('response.in_progress');
    expect(types.at(-1)).toBe('response.completed');
    expect(types).toContain('response.output_item.added');
    expect(types).toContain('response.content_part.added');
    expect(types).toContain('response.output_text.done');
    expect(types).toContain('response.output_item.done');
    expect(text).toMatch(/^Simulated reply from deepseek to: Tell me about rivers/);
    expect(final.output_text).toBe(text);
    expect(final.status).toBe('completed');
    const usage = final.usage as OpenAI.Responses.ResponseUsage;
    expect(usage.output_tokens).toBeGreaterThan(0);
    const after = await h.balanceNano();
    const row = await rowOf(final.id);
    const { meta } = final as unknown as Billed;
    expect(before - after).toBe(row.inputCostNano + row.outputCostNano);
    expect(Math.round(meta.cost.total * 1e9)).toBe(before - after);
    expect(row.promptTokens).toBe(usage.input_tokens);
    expect(row.completionTokens).toBe(usage.output_tokens);
  });

  it('create({stream: true}): sequence numbers in order, one response id throughout', async () => {
    const stream = await client.responses.create({
      model: 'prov-claude',
      input: 'Hello there',
      stream: true,
    });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const last = events.at(-1) as OpenAI.Responses.ResponseCompletedEvent;
    expect(last.type).toBe('response.completed');
    expect(last.response.id).toBe((events[0] as OpenAI.Responses.ResponseCreatedEvent).response.id);
    expect(last.response.usage?.total_tokens).toBeGreaterThan(0);
  });

  it('a function_call / function_call_output round trip, plain and streamed', async () => {
    for (const stream of [false, true]) {
      const input: OpenAI.Responses.ResponseInput = [
        { role: 'user', content: 'What is the get_weather in Paris' },
      ];
      const first = stream
        ? await client.responses.stream({ model: 'prov-kimi', input, tools: [weather] }).finalResponse()
        : await client.responses.create({ model: 'prov-kimi', input, tools: [weather] });
      const call = first.output.find((o) => o.type === 'function_call');
      expect(call, `stream ${stream}`).toMatchObject({
        type: 'function_call',
        name: 'get_weather',
        status: 'completed',
      });
      const fc = call as OpenAI.Responses.ResponseFunctionToolCall;
      expect(JSON.parse(fc.arguments)).toHaveProperty('city');
      const second = await client.responses.create({
        model: 'prov-kimi',
        tools: [weather],
        input: [
          ...input,
          { type: 'function_call', call_id: fc.call_id, name: fc.name, arguments: fc.arguments },
          { type: 'function_call_output', call_id: fc.call_id, output: 'Sunny, 21 C' },
        ],
      });
      expect(second.output_text).toContain('Sunny, 21 C');
    }
  });

  it('namespace tools: the call names its namespace and the function as offered', async () => {
    const response = await client.responses.create({
      model: 'prov-qwen',
      input: 'Please lookup the customer',
      tools: [
        {
          type: 'namespace',
          name: 'crm',
          description: 'The customer database',
          tools: [
            {
              type: 'function',
              name: 'lookup',
              parameters: { type: 'object', properties: { id: { type: 'string' } } },
            },
          ],
        } as unknown as OpenAI.Responses.Tool,
      ],
    });
    const call = response.output.find((o) => o.type === 'function_call') as unknown as Record<
      string,
      unknown
    >;
    expect(call).toMatchObject({ name: 'lookup', namespace: 'crm' });
  });

  it('web_search is left out and named in x-tollgate-dropped-params; previous_response_id is refused', async () => {
    const { data, response } = await client.responses
      .create({
        model: 'prov-qwen',
        input: 'Hello there',
        tools: [{ type: 'web_search' }, weather],
        tool_choice: 'none',
      })
      .withResponse();
    expect(response.headers.get('x-tollgate-dropped-params')?.split(',')).toContain('web_search');
    expect(data.status).toBe('completed');

    const err = await client.responses
      .create({ model: 'prov-qwen', input: 'Hello', previous_response_id: 'resp_123' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    const bad = err as InstanceType<typeof OpenAI.BadRequestError>;
    expect(bad.status).toBe(400);
    expect(bad.param).toBe('previous_response_id');
    expect(bad.error).toMatchObject({ type: 'invalid_request_error', code: 'unsupported_parameter' });
  });

  it('errors keep the OpenAI shape: 401, 400 with param, 404 for a stored response', async () => {
    const stranger = new OpenAI({
      apiKey: 'sk-svc-00000000000000000000000000000000',
      baseURL,
      maxRetries: 0,
    });
    const unauth = await stranger.responses.create({ model: 'auto', input: 'hi' }).catch((e: unknown) => e);
    expect(unauth).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((unauth as InstanceType<typeof OpenAI.AuthenticationError>).code).toBe('invalid_api_key');

    const noInput = await client.responses
      .create({ model: 'auto' } as unknown as OpenAI.Responses.ResponseCreateParamsNonStreaming)
      .catch((e: unknown) => e);
    expect((noInput as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('input');

    const missing = await client.responses.retrieve('resp_abc').catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('leaves the ledger consistent', async () => {
    const report = await h.server.store.ledgerCheck();
    expect(report.ok).toBe(true);
  });
});
