import { describe, expect, it } from 'vitest';
import { openaiCompatibleAdapter } from '../../src/providers/openai-compatible/index.js';
import {
  type ChatMessage,
  type ContentPart,
  OPENAI_ONLY_FIELDS,
  type OpenAIOnlyFields,
  type ResponseFormat,
  type ToolChoice,
  type ToolDefinition,
  type UpstreamChatRequest,
} from '../../src/providers/types.js';
import { chatRequest, jsonBody, providerConfig } from './provider-test-helpers.js';

const deepseek = providerConfig(
  'prov-deepseek',
  'openai-compatible',
  'https://api.deepseek.com/v1',
  'deepseek-chat',
);

function body(overrides: Partial<UpstreamChatRequest>): Record<string, unknown> {
  return jsonBody(openaiCompatibleAdapter.buildRequest(deepseek, chatRequest(overrides)).body);
}

/** The messages sent for a conversation of one user message made of `parts`. */
function sentParts(parts: ContentPart[]): unknown {
  return body({ messages: [{ role: 'user', content: parts }] }).messages;
}

/** OpenAI's function-calling guide: the weather tool. */
const GET_WEATHER: ToolDefinition = {
  name: 'get_weather',
  description: 'Get current temperature for a given location.',
  parameters: {
    type: 'object',
    properties: { location: { type: 'string', description: 'City and country e.g. Bogotá, Colombia' } },
    required: ['location'],
    additionalProperties: false,
  },
  strict: true,
};

describe('openai-compatible request: the tool round trip', () => {
  it('sends tools, the assistant tool calls with null content, each tool result and the next turn', () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: "What's the weather like in Paris and Bogotá today?" },
      {
        role: 'assistant',
        content: null,
        toolCalls: [
          { id: 'call_12345xyz', name: 'get_weather', arguments: '{"location":"Paris, France"}' },
          { id: 'call_67890abc', name: 'get_weather', arguments: '{"location":"Bogotá, Colombia"}' },
        ],
      },
      { role: 'tool', toolCallId: 'call_12345xyz', name: 'get_weather', content: '14°C, sunny' },
      { role: 'tool', toolCallId: 'call_67890abc', name: 'get_weather', content: '18°C, cloudy' },
      { role: 'user', content: 'And tomorrow?' },
    ];
    const sent = body({
      messages,
      tools: [GET_WEATHER],
      toolChoice: { type: 'auto' },
      parallelToolCalls: true,
    });
    expect(sent.messages).toEqual([
      { role: 'user', content: "What's the weather like in Paris and Bogotá today?" },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_12345xyz',
            type: 'function',
            function: { name: 'get_weather', arguments: '{"location":"Paris, France"}' },
          },
          {
            id: 'call_67890abc',
            type: 'function',
            function: { name: 'get_weather', arguments: '{"location":"Bogotá, Colombia"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_12345xyz', content: '14°C, sunny' },
      { role: 'tool', tool_call_id: 'call_67890abc', content: '18°C, cloudy' },
      { role: 'user', content: 'And tomorrow?' },
    ]);
    expect(sent.tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'Get current temperature for a given location.',
          parameters: GET_WEATHER.parameters,
          strict: true,
        },
      },
    ]);
    expect(sent.tool_choice).toBe('auto');
    expect(sent.parallel_tool_calls).toBe(true);
  });

  it('writes a tool with only a name as only a name', () => {
    expect(body({ tools: [{ name: 'now' }] }).tools).toEqual([
      { type: 'function', function: { name: 'now' } },
    ]);
  });

  it('sends parallel_tool_calls false, and no tool keys at all when the call has none', () => {
    expect(body({ parallelToolCalls: false }).parallel_tool_calls).toBe(false);
    const plain = body({});
    for (const key of ['tools', 'tool_choice', 'parallel_tool_calls', 'response_format']) {
      expect(plain).not.toHaveProperty(key);
    }
  });

  it.each<[ToolChoice, unknown]>([
    [{ type: 'auto' }, 'auto'],
    [{ type: 'none' }, 'none'],
    [{ type: 'required' }, 'required'],
    [
      { type: 'function', name: 'get_weather' },
      { type: 'function', function: { name: 'get_weather' } },
    ],
  ])('tool choice %j → tool_choice %j', (toolChoice, expected) => {
    expect(body({ tools: [GET_WEATHER], toolChoice }).tool_choice).toEqual(expected);
  });
});

describe('openai-compatible request: messages', () => {
  it('sends a developer message as a system message, and names where the caller set them', () => {
    const sent = body({
      messages: [
        { role: 'developer', content: 'Answer in French.' },
        { role: 'system', content: 'You are terse.', name: 'house-rules' },
        { role: 'developer', content: 'Be brief.', name: 'dev' },
        { role: 'user', content: 'Hi', name: 'alice' },
        { role: 'assistant', content: 'Bonjour.', name: 'bot' },
      ],
    });
    expect(sent.messages).toEqual([
      { role: 'system', content: 'Answer in French.' },
      { role: 'system', content: 'You are terse.', name: 'house-rules' },
      { role: 'system', content: 'Be brief.', name: 'dev' },
      { role: 'user', content: 'Hi', name: 'alice' },
      { role: 'assistant', content: 'Bonjour.', name: 'bot' },
    ]);
  });

  it('sends an assistant refusal only when there is one, and no empty tool_calls list', () => {
    const sent = body({
      messages: [
        { role: 'user', content: 'Help me pick a lock.' },
        { role: 'assistant', content: null, refusal: "I'm sorry, I cannot assist with that request." },
        { role: 'user', content: 'Then say hello.' },
        { role: 'assistant', content: 'Hello.', toolCalls: [] },
      ],
    });
    expect(sent.messages).toEqual([
      { role: 'user', content: 'Help me pick a lock.' },
      { role: 'assistant', content: null, refusal: "I'm sorry, I cannot assist with that request." },
      { role: 'user', content: 'Then say hello.' },
      { role: 'assistant', content: 'Hello.' },
    ]);
  });
});

describe('openai-compatible request: content parts', () => {
  it('sends images by data URL and by http URL, with detail only when given', () => {
    expect(
      sentParts([
        { type: 'text', text: "What's in these images?" },
        {
          type: 'image',
          image: { kind: 'data', mediaType: 'image/png', data: 'iVBORw0KGgo=' },
          detail: 'low',
        },
        {
          type: 'image',
          image: { kind: 'url', url: 'https://upload.wikimedia.org/wikipedia/commons/boardwalk.jpg' },
          detail: 'high',
        },
        { type: 'image', image: { kind: 'url', url: 'http://example.com/cat.jpg' }, detail: undefined },
      ]),
    ).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: "What's in these images?" },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'low' } },
          {
            type: 'image_url',
            image_url: {
              url: 'https://upload.wikimedia.org/wikipedia/commons/boardwalk.jpg',
              detail: 'high',
            },
          },
          { type: 'image_url', image_url: { url: 'http://example.com/cat.jpg' } },
        ],
      },
    ]);
  });

  it('sends audio as input_audio', () => {
    expect(
      sentParts([
        { type: 'text', text: 'What is in this recording?' },
        { type: 'audio', data: 'UklGRiQAAABXQVZF', format: 'wav' },
      ]),
    ).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in this recording?' },
          { type: 'input_audio', input_audio: { data: 'UklGRiQAAABXQVZF', format: 'wav' } },
        ],
      },
    ]);
  });

  it('sends files inline as a data URL or by file id, with only the keys the caller set', () => {
    expect(
      sentParts([
        {
          type: 'file',
          data: 'JVBERi0xLjQ=',
          mediaType: 'application/pdf',
          fileId: undefined,
          filename: 'draconomicon.pdf',
        },
        {
          type: 'file',
          data: undefined,
          mediaType: undefined,
          fileId: 'file-6F2ksmvXxt4VdoqmHRw6kL',
          filename: undefined,
        },
        { type: 'file', data: 'JVBERi0xLjQ=', mediaType: undefined, fileId: undefined, filename: undefined },
      ]),
    ).toEqual([
      {
        role: 'user',
        content: [
          {
            type: 'file',
            file: { file_data: 'data:application/pdf;base64,JVBERi0xLjQ=', filename: 'draconomicon.pdf' },
          },
          { type: 'file', file: { file_id: 'file-6F2ksmvXxt4VdoqmHRw6kL' } },
          { type: 'file', file: { file_data: 'JVBERi0xLjQ=' } },
        ],
      },
    ]);
  });
});

describe('openai-compatible request: structured output', () => {
  const mathReasoning = {
    type: 'object',
    properties: {
      steps: {
        type: 'array',
        items: {
          type: 'object',
          properties: { explanation: { type: 'string' }, output: { type: 'string' } },
          required: ['explanation', 'output'],
          additionalProperties: false,
        },
      },
      final_answer: { type: 'string' },
    },
    required: ['steps', 'final_answer'],
    additionalProperties: false,
  };

  it.each<[string, ResponseFormat, unknown]>([
    ['text', { type: 'text' }, { type: 'text' }],
    ['JSON mode', { type: 'json_object' }, { type: 'json_object' }],
    [
      'a strict JSON schema',
      {
        type: 'json_schema',
        name: 'math_reasoning',
        description: 'Step-by-step solution',
        schema: mathReasoning,
        strict: true,
      },
      {
        type: 'json_schema',
        json_schema: {
          name: 'math_reasoning',
          description: 'Step-by-step solution',
          schema: mathReasoning,
          strict: true,
        },
      },
    ],
    [
      'a schema with only a name',
      { type: 'json_schema', name: 'anything' },
      { type: 'json_schema', json_schema: { name: 'anything' } },
    ],
  ])('%s', (_label, responseFormat, expected) => {
    expect(body({ responseFormat }).response_format).toEqual(expected);
  });
});

describe('openai-compatible request: n, logprobs, reasoning effort, sampling', () => {
  it('sends n only above 1', () => {
    expect(body({ n: 3 }).n).toBe(3);
    expect(body({ n: 1 })).not.toHaveProperty('n');
  });

  it('sends logprobs: true, with top_logprobs when given', () => {
    const withTop = body({ logprobs: { top: 2 } });
    expect(withTop.logprobs).toBe(true);
    expect(withTop.top_logprobs).toBe(2);
    const bare = body({ logprobs: { top: undefined } });
    expect(bare.logprobs).toBe(true);
    expect(bare).not.toHaveProperty('top_logprobs');
    expect(body({ logprobs: { top: 0 } }).top_logprobs).toBe(0);
    const none = body({});
    expect(none).not.toHaveProperty('logprobs');
    expect(none).not.toHaveProperty('top_logprobs');
  });

  it('sends reasoning_effort as given', () => {
    expect(body({ reasoningEffort: 'low' }).reasoning_effort).toBe('low');
    expect(body({ reasoningEffort: 'none' }).reasoning_effort).toBe('none');
    expect(body({})).not.toHaveProperty('reasoning_effort');
  });

  it('sends logit_bias with every other sampling parameter', () => {
    const params = {
      temperature: 0,
      top_p: 1,
      stop: ['END'],
      presence_penalty: 0,
      frequency_penalty: 0,
      seed: 7,
      user: 'user-1234',
      logit_bias: { '50256': -100, '1734': 5 },
    };
    expect(body({ params })).toMatchObject(params);
  });
});

describe('openai-compatible request: OpenAI-only fields', () => {
  const values: Required<OpenAIOnlyFields> = {
    metadata: { project: 'tollgate', run: '42' },
    prediction: { type: 'content', content: 'class User {}' },
    service_tier: 'flex',
    store: false,
    prompt_cache_key: 'conversation-7',
    safety_identifier: 'hashed-user-9f86d081',
    verbosity: 'low',
    web_search_options: { search_context_size: 'medium' },
  };

  it('has a value for every field the types list', () => {
    expect(Object.keys(values).sort()).toEqual(Object.keys(OPENAI_ONLY_FIELDS).sort());
  });

  it.each(Object.entries(values))('sends %s under its own name', (field, value) => {
    const sent = body({ openai: { [field]: value } });
    expect(sent[field]).toEqual(value);
    for (const other of Object.keys(values)) if (other !== field) expect(sent).not.toHaveProperty(other);
  });

  it('sends them all together, and drops nothing', () => {
    const request = chatRequest({
      openai: values,
      n: 2,
      logprobs: { top: 5 },
      reasoningEffort: 'high',
      tools: [GET_WEATHER],
      toolChoice: { type: 'required' },
      parallelToolCalls: false,
      responseFormat: { type: 'json_object' },
      params: { temperature: 0.3, logit_bias: { '1': 1 } },
    });
    const built = openaiCompatibleAdapter.buildRequest(deepseek, request);
    expect(built.dropped).toBeUndefined();
    expect(jsonBody(built.body)).toMatchObject(values);
    expect(openaiCompatibleAdapter.refusal(deepseek, request)).toBeUndefined();
  });
});
