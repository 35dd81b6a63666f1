import { describe, expect, it } from 'vitest';
import { anthropicAdapter } from '../../src/providers/anthropic/index.js';
import type { ToolChoice, ToolDefinition, UpstreamChatRequest } from '../../src/providers/types.js';
import {
  catchError,
  chatRequest,
  fixture,
  httpResponse,
  jsonBody,
  providerConfig,
} from './provider-test-helpers.js';

const claude = providerConfig('prov-claude', 'anthropic', 'https://api.anthropic.com', 'claude-sonnet-4-5');

const TOOLS: ToolDefinition[] = [
  {
    name: 'get_weather',
    description: 'Get the current weather in a given location',
    parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
    strict: true,
  },
  {
    name: 'get_time',
    parameters: { type: 'object', properties: { timezone: { type: 'string' } } },
    strict: false,
  },
  { name: 'ping' },
];

function build(overrides: Partial<UpstreamChatRequest>) {
  const req = anthropicAdapter.buildRequest(claude, chatRequest(overrides));
  return { body: jsonBody(req.body), dropped: req.dropped };
}

function parse(body: unknown, overrides: Partial<UpstreamChatRequest> = {}) {
  return anthropicAdapter.parseResponse(claude, httpResponse(200, body), chatRequest(overrides));
}

function message(content: unknown[], stopReason: string): Record<string, unknown> {
  return {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-5-20250929',
    content,
    stop_reason: stopReason,
    stop_sequence: null,
    usage: { input_tokens: 20, output_tokens: 10 },
  };
}

describe('anthropic adapter: tools', () => {
  // https://docs.anthropic.com/en/api/messages#body-tools
  it('sends each function as {name, description, input_schema, strict only when true}', () => {
    const { body } = build({ tools: TOOLS });
    expect(body.tools).toEqual([
      {
        name: 'get_weather',
        description: 'Get the current weather in a given location',
        input_schema: {
          type: 'object',
          properties: { location: { type: 'string' } },
          required: ['location'],
        },
        strict: true,
      },
      { name: 'get_time', input_schema: { type: 'object', properties: { timezone: { type: 'string' } } } },
      { name: 'ping', input_schema: { type: 'object', properties: {} } },
    ]);
    expect(body).not.toHaveProperty('tool_choice');
  });

  // https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use#forcing-tool-use
  it.each<[ToolChoice, unknown, unknown]>([
    [{ type: 'auto' }, { type: 'auto' }, { type: 'auto', disable_parallel_tool_use: true }],
    [{ type: 'required' }, { type: 'any' }, { type: 'any', disable_parallel_tool_use: true }],
    [
      { type: 'function', name: 'get_time' },
      { type: 'tool', name: 'get_time' },
      { type: 'tool', name: 'get_time', disable_parallel_tool_use: true },
    ],
    [{ type: 'none' }, { type: 'none' }, { type: 'none' }],
  ])('tool_choice %j → %j (parallel_tool_calls false → %j)', (toolChoice, expected, single) => {
    expect(build({ tools: TOOLS, toolChoice }).body.tool_choice).toEqual(expected);
    expect(build({ tools: TOOLS, toolChoice, parallelToolCalls: true }).body.tool_choice).toEqual(expected);
    expect(build({ tools: TOOLS, toolChoice, parallelToolCalls: false }).body.tool_choice).toEqual(single);
  });

  it('parallel_tool_calls false without tool_choice → auto with disable_parallel_tool_use', () => {
    expect(build({ tools: TOOLS, parallelToolCalls: false }).body.tool_choice).toEqual({
      type: 'auto',
      disable_parallel_tool_use: true,
    });
  });

  it('sends neither tools nor tool_choice without tools', () => {
    const { body, dropped } = build({ tools: [], toolChoice: { type: 'none' }, parallelToolCalls: false });
    expect(body).not.toHaveProperty('tools');
    expect(body).not.toHaveProperty('tool_choice');
    expect(dropped).toBeUndefined();
  });
});

describe('anthropic adapter: tool calls in answers', () => {
  // https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use (single tool example)
  it('reads a text + tool_use answer: tool calls with JSON arguments, finish tool_calls, cached tokens', () => {
    expect(parse(fixture('anthropic-tool-use.json'), { tools: TOOLS })).toEqual({
      choices: [
        {
          text: "I'll check the current weather in San Francisco for you.",
          toolCalls: [
            {
              id: 'toolu_01A09q90qw90lq917835lq9',
              name: 'get_weather',
              arguments: '{"location":"San Francisco, CA","unit":"celsius"}',
            },
          ],
          finishReason: 'tool_calls',
        },
      ],
      usage: {
        promptTokens: 472 + 0 + 384,
        completionTokens: 89,
        cachedPromptTokens: 384,
        cacheWritePromptTokens: 0,
      },
      model: 'claude-sonnet-4-5-20250929',
    });
  });

  // https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/parallel-tool-use (weather and time
  // of two cities in one turn)
  it('reads parallel tool_use blocks in order', () => {
    const [choice] = parse(fixture('anthropic-parallel-tool-use.json'), { tools: TOOLS }).choices;
    expect(choice?.finishReason).toBe('tool_calls');
    expect(choice?.text).toBe("I'll check the weather and time for both cities.");
    expect(choice?.toolCalls).toEqual([
      { id: 'toolu_01WeatherSF', name: 'get_weather', arguments: '{"location":"San Francisco, CA"}' },
      { id: 'toolu_01WeatherNYC', name: 'get_weather', arguments: '{"location":"New York, NY"}' },
      { id: 'toolu_01TimeSF', name: 'get_time', arguments: '{"timezone":"America/Los_Angeles"}' },
      { id: 'toolu_01TimeNYC', name: 'get_time', arguments: '{"timezone":"America/New_York"}' },
    ]);
  });

  it('an answer of tool calls only has null text', () => {
    const [choice] = parse(
      message([{ type: 'tool_use', id: 'toolu_9', name: 'ping', input: {} }], 'tool_use'),
    ).choices;
    expect(choice).toEqual({
      text: null,
      toolCalls: [{ id: 'toolu_9', name: 'ping', arguments: '{}' }],
      finishReason: 'tool_calls',
    });
  });

  it('a tool_use block without an id or a name is unreadable', () => {
    expect(
      catchError(() => parse(message([{ type: 'tool_use', name: 'ping', input: {} }], 'tool_use'))).kind,
    ).toBe('bad_response');
  });
});

describe('anthropic adapter: response_format', () => {
  const SCHEMA = {
    type: 'object',
    properties: {
      name: { type: 'string' },
      email: { type: 'string' },
      plan_interest: { type: 'string' },
      demo_requested: { type: 'boolean' },
    },
    required: ['name', 'email', 'plan_interest', 'demo_requested'],
    additionalProperties: false,
  };

  it('text sends nothing', () => {
    const { body } = build({ responseFormat: { type: 'text' } });
    for (const absent of ['output_config', 'tools', 'tool_choice']) expect(body).not.toHaveProperty(absent);
  });

  // https://docs.anthropic.com/en/docs/build-with-claude/structured-outputs (JSON outputs, GA
  // `output_config.format`; no beta header)
  it('json_schema → output_config.format; its description is reported as dropped', () => {
    const req = anthropicAdapter.buildRequest(
      claude,
      chatRequest({ responseFormat: { type: 'json_schema', name: 'lead', schema: SCHEMA, strict: true } }),
    );
    expect(jsonBody(req.body).output_config).toEqual({ format: { type: 'json_schema', schema: SCHEMA } });
    expect(req.headers).not.toHaveProperty('anthropic-beta');
    expect(req.dropped).toBeUndefined();
    const described = build({
      responseFormat: { type: 'json_schema', name: 'lead', description: 'A sales lead', schema: SCHEMA },
    });
    expect(described.dropped).toEqual(['response_format.json_schema.description']);
  });

  it('reads a structured-output answer: the text is the JSON', () => {
    const result = parse(fixture('anthropic-structured-output.json'), {
      responseFormat: { type: 'json_schema', name: 'lead', schema: SCHEMA },
    });
    expect(result.choices).toEqual([
      {
        text: '{"name":"John Smith","email":"john@example.com","plan_interest":"Enterprise","demo_requested":true}',
        toolCalls: [],
        finishReason: 'stop',
      },
    ]);
  });

  it('json_object → a forced json_object tool, one call only', () => {
    const { body } = build({ responseFormat: { type: 'json_object' } });
    expect(body.tools).toEqual([
      { name: 'json_object', description: 'Respond with a JSON object.', input_schema: { type: 'object' } },
    ]);
    expect(body.tool_choice).toEqual({ type: 'tool', name: 'json_object', disable_parallel_tool_use: true });
    expect(body).not.toHaveProperty('output_config');
  });

  it('json_object answer: the forced tool input is the text, no tool calls, finish stop', () => {
    const answer = message(
      [{ type: 'tool_use', id: 'toolu_j', name: 'json_object', input: { colour: 'blue', shades: [1, 2] } }],
      'tool_use',
    );
    expect(parse(answer, { responseFormat: { type: 'json_object' } }).choices).toEqual([
      { text: '{"colour":"blue","shades":[1,2]}', toolCalls: [], finishReason: 'stop' },
    ]);
    // Without JSON mode a tool of that name is an ordinary call.
    expect(parse(answer).choices[0]?.toolCalls).toHaveLength(1);
  });

  it('json_object answer cut short before the tool call keeps its text and finish length', () => {
    const answer = message([{ type: 'text', text: '{"colour": "bl' }], 'max_tokens');
    expect(parse(answer, { responseFormat: { type: 'json_object' } }).choices).toEqual([
      { text: '{"colour": "bl', toolCalls: [], finishReason: 'length' },
    ]);
  });
});

describe('anthropic adapter: refusal stop', () => {
  it('a refusal stop is content_filter, with stop_details.explanation as the refusal', () => {
    const answer = {
      ...message([], 'refusal'),
      stop_details: { type: 'refusal', category: 'cyber', explanation: 'This request could enable malware.' },
    };
    expect(parse(answer).choices).toEqual([
      {
        text: null,
        toolCalls: [],
        finishReason: 'content_filter',
        refusal: 'This request could enable malware.',
      },
    ]);
    expect(parse(message([{ type: 'text', text: 'I' }], 'refusal')).choices).toEqual([
      { text: 'I', toolCalls: [], finishReason: 'content_filter' },
    ]);
  });
});

describe('tool call ids other upstreams made', () => {
  it('are sent in the form Anthropic takes, the same on the call and on its result', () => {
    const claude = providerConfig(
      'prov-claude',
      'anthropic',
      'https://api.anthropic.com',
      'claude-sonnet-4-5',
    );
    const req = anthropicAdapter.buildRequest(
      claude,
      chatRequest({
        messages: [
          { role: 'user', content: 'Weather?' },
          {
            role: 'assistant',
            content: null,
            toolCalls: [{ id: 'functions.get_weather:0', name: 'get_weather', arguments: '{}' }],
          },
          { role: 'tool', toolCallId: 'functions.get_weather:0', name: 'get_weather', content: 'sunny' },
        ],
      }),
    );
    const messages = jsonBody(req.body).messages as Array<{ content: Array<Record<string, unknown>> }>;
    expect(messages[1]?.content[0]).toMatchObject({ type: 'tool_use', id: 'functions_get_weather_0' });
    expect(messages[2]?.content[0]).toMatchObject({
      type: 'tool_result',
      tool_use_id: 'functions_get_weather_0',
    });
  });
});
