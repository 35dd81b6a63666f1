import { describe, expect, it } from 'vitest';
import { createChatRequestValidator } from '../../src/api/validate-chat-request.js';
import { GatewayError } from '../../src/errors.js';

const validate = createChatRequestValidator({ maxMessages: 50, maxTokensCeiling: 100_000 });

function errorOf(body: unknown): { code: string; message: string; param: string | undefined } {
  try {
    validate(body);
  } catch (err) {
    if (err instanceof GatewayError) return { code: err.code, message: err.message, param: err.param };
    throw err;
  }
  throw new Error('expected a validation error');
}

const weather = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather of a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};
const PNG = 'iVBORw0KGgo=';

describe('tool calling requests', () => {
  it('normalises a full tool round trip: calls on the assistant, results paired with their function', () => {
    const req = validate({
      messages: [
        { role: 'developer', content: 'Use tools.' },
        { role: 'user', content: 'Weather in Paris and Oslo?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: 'call_1',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
            },
            {
              id: 'call_2',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city":"Oslo"}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'call_2', content: [{ type: 'text', text: '4C' }] },
        { role: 'tool', tool_call_id: 'call_1', content: '18C' },
      ],
      tools: [weather],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      parallel_tool_calls: false,
    });
    expect(req.messages).toEqual([
      { role: 'developer', content: 'Use tools.' },
      { role: 'user', content: 'Weather in Paris and Oslo?' },
      {
        role: 'assistant',
        content: null,
        toolCalls: [
          { id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
          { id: 'call_2', name: 'get_weather', arguments: '{"city":"Oslo"}' },
        ],
      },
      { role: 'tool', toolCallId: 'call_2', name: 'get_weather', content: '4C' },
      { role: 'tool', toolCallId: 'call_1', name: 'get_weather', content: '18C' },
    ]);
    expect(req.tools).toEqual([
      {
        name: 'get_weather',
        description: 'Weather of a city',
        parameters: weather.function.parameters,
      },
    ]);
    expect(req.toolChoice).toEqual({ type: 'function', name: 'get_weather' });
    expect(req.parallelToolCalls).toBe(false);
    expect(req.legacyFunctions).toBe(false);
  });

  it('reads the legacy functions, function_call and function messages as tools', () => {
    const req = validate({
      messages: [
        { role: 'user', content: 'Weather?' },
        { role: 'assistant', content: null, function_call: { name: 'get_weather', arguments: '{}' } },
        { role: 'function', name: 'get_weather', content: 'sunny' },
      ],
      functions: [weather.function],
      function_call: 'auto',
    });
    expect(req.legacyFunctions).toBe(true);
    expect(req.tools?.map((t) => t.name)).toEqual(['get_weather']);
    expect(req.toolChoice).toEqual({ type: 'auto' });
    const call = req.messages[1];
    expect(call).toMatchObject({ role: 'assistant', content: null });
    const id = call?.role === 'assistant' ? call.toolCalls?.[0]?.id : undefined;
    expect(req.messages[2]).toEqual({ role: 'tool', toolCallId: id, name: 'get_weather', content: 'sunny' });
  });

  it.each([
    [
      'a tool result that answers no call',
      {
        messages: [
          { role: 'user', content: 'x' },
          { role: 'tool', tool_call_id: 'nope', content: 'y' },
        ],
      },
      'messages[1].tool_call_id',
    ],
    [
      'a tool result answered twice',
      {
        messages: [
          { role: 'user', content: 'x' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }],
          },
          { role: 'tool', tool_call_id: 'c', content: 'y' },
          { role: 'tool', tool_call_id: 'c', content: 'z' },
        ],
      },
      'messages[3].tool_call_id',
    ],
    [
      'an assistant message with neither content nor tool calls',
      {
        messages: [
          { role: 'user', content: 'x' },
          { role: 'assistant', content: null },
        ],
      },
      'messages[1].content',
    ],
    [
      'an image in a system message',
      {
        messages: [
          {
            role: 'system',
            content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } }],
          },
        ],
      },
      'messages[0].content[0]',
    ],
    [
      'an image URL that is neither data: nor http(s)',
      {
        messages: [
          { role: 'user', content: [{ type: 'image_url', image_url: { url: 'file:///etc/passwd' } }] },
        ],
      },
      'messages[0].content[0].image_url.url',
    ],
    [
      'a data: URL that is not an image',
      {
        messages: [
          {
            role: 'user',
            content: [{ type: 'image_url', image_url: { url: 'data:text/html;base64,PGI+' } }],
          },
        ],
      },
      'messages[0].content[0].image_url.url',
    ],
  ])('refuses %s with invalid_messages naming the field', (_what, body, param) => {
    const e = errorOf(body);
    expect(e.code).toBe('invalid_messages');
    // The message says what is wrong with the item it names.
    expect(e.message.startsWith(`${param} `)).toBe(true);
    expect(e.param).toBe(param);
  });

  it.each([
    ['tool_choice without tools', { tool_choice: 'auto' }, 'tool_choice'],
    [
      'a tool_choice naming a tool not offered',
      { tools: [weather], tool_choice: { type: 'function', function: { name: 'other' } } },
      'tool_choice',
    ],
    ['tools and functions together', { tools: [weather], functions: [weather.function] }, 'functions'],
    ['top_logprobs without logprobs', { top_logprobs: 3 }, 'top_logprobs'],
    [
      'a function name with spaces',
      { tools: [{ type: 'function', function: { name: 'get weather' } }] },
      'tools[0].function.name',
    ],
    ['n above 8', { n: 9 }, 'n'],
  ])('refuses %s with invalid_request', (_what, extra, param) => {
    const e = errorOf({ messages: [{ role: 'user', content: 'hi' }], ...extra });
    expect(e).toMatchObject({ code: 'invalid_request', param });
  });

  it('refuses audio output on every provider: Tollgate answers text only', () => {
    for (const extra of [{ modalities: ['text', 'audio'] }, { audio: { voice: 'alloy', format: 'wav' } }]) {
      const e = errorOf({ messages: [{ role: 'user', content: 'hi' }], ...extra });
      expect(e.code).toBe('unsupported_parameter');
      expect(e.param).toBe(Object.keys(extra)[0]);
    }
    expect(validate({ messages: [{ role: 'user', content: 'hi' }], modalities: ['text'] }).n).toBe(1);
  });
});

describe('content parts, structured output and the other fields', () => {
  it('keeps images, audio and files as parts, and text-only content as one string', () => {
    const req = validate({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is this?' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}`, detail: 'low' } },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
            { type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } },
            { type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi0=', filename: 'a.pdf' } },
          ],
        },
      ],
    });
    expect(req.messages[0]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'What is this?' },
        { type: 'image', image: { kind: 'data', mediaType: 'image/png', data: PNG }, detail: 'low' },
        { type: 'image', image: { kind: 'url', url: 'https://example.com/cat.jpg' }, detail: undefined },
        { type: 'audio', data: 'UklGRg==', format: 'wav' },
        {
          type: 'file',
          data: 'JVBERi0=',
          mediaType: 'application/pdf',
          fileId: undefined,
          filename: 'a.pdf',
        },
      ],
    });
  });

  it('reads response_format, n, logprobs, reasoning effort and the OpenAI-only fields', () => {
    const schema = { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] };
    const req = validate({
      messages: [{ role: 'user', content: 'hi' }],
      response_format: { type: 'json_schema', json_schema: { name: 'thing', schema, strict: true } },
      n: 2,
      logprobs: true,
      top_logprobs: 3,
      reasoning_effort: 'low',
      logit_bias: { '50256': -100 },
      metadata: { team: 'a' },
      service_tier: 'auto',
      web_search_options: {},
    });
    expect(req.responseFormat).toEqual({ type: 'json_schema', name: 'thing', schema, strict: true });
    expect(req.n).toBe(2);
    expect(req.logprobs).toEqual({ top: 3 });
    expect(req.reasoningEffort).toBe('low');
    expect(req.params.logit_bias).toEqual({ '50256': -100 });
    expect(req.openai).toEqual({ metadata: { team: 'a' }, service_tier: 'auto', web_search_options: {} });
    expect(
      validate({ messages: [{ role: 'user', content: 'x' }], response_format: { type: 'text' } })
        .responseFormat,
    ).toBe(undefined);
  });
});
