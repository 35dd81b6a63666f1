import { describe, expect, it } from 'vitest';
import { geminiAdapter } from '../../src/providers/gemini/index.js';
import type { ChatMessage, ToolDefinition, UpstreamChatRequest } from '../../src/providers/types.js';
import { chatRequest, jsonBody, providerConfig } from './provider-test-helpers.js';

const gemini = providerConfig(
  'prov-gemini',
  'gemini',
  'https://generativelanguage.googleapis.com',
  'gemini-2.5-flash',
);

/** The request body and `dropped` the adapter builds for a call with `overrides`. */
function build(overrides: Partial<UpstreamChatRequest>): {
  body: Record<string, unknown>;
  dropped: string[] | undefined;
} {
  const request = geminiAdapter.buildRequest(
    gemini,
    chatRequest({ model: 'gemini-2.5-flash', ...overrides }),
  );
  return { body: jsonBody(request.body), dropped: request.dropped };
}

const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const PDF =
  'JVBERi0xLjQKJcfsj6IKMSAwIG9iago8PC9UeXBlL0NhdGFsb2c+PgplbmRvYmoKdHJhaWxlcgo8PC9Sb290IDEgMCBSPj4KJSVFT0YK';
const WAV = 'UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=';

/** The weather tool of the round trip (the Gemini function-calling guide's example, in OpenAI form). */
const WEATHER: ToolDefinition = {
  name: 'get_current_temperature',
  description: 'Gets the current temperature for a given location.',
  parameters: {
    type: 'object',
    properties: { location: { type: 'string', description: 'The city name, e.g. San Francisco' } },
    required: ['location'],
  },
};

describe('gemini request: a tool round trip', () => {
  const conversation: ChatMessage[] = [
    { role: 'developer', content: 'Answer in one sentence.' },
    { role: 'user', content: 'Is it warmer in Paris or in London?' },
    {
      role: 'assistant',
      content: null,
      toolCalls: [
        { id: 'call_paris', name: 'get_current_temperature', arguments: '{"location":"Paris"}' },
        { id: 'call_london', name: 'get_current_temperature', arguments: '{"location":"London"}' },
      ],
    },
    // The results arrive in the other order: they are sent in the order of the calls.
    { role: 'tool', toolCallId: 'call_london', name: 'get_current_temperature', content: '{"celsius":14}' },
    { role: 'tool', toolCallId: 'call_paris', name: 'get_current_temperature', content: '18 °C, sunny' },
    { role: 'user', content: 'And in Rome?' },
  ];

  it('sends the calls as a model turn and the results, then the next question, as one user turn', () => {
    const { body, dropped } = build({ messages: conversation, tools: [WEATHER] });
    expect(dropped).toBeUndefined();
    expect(body.systemInstruction).toEqual({ parts: [{ text: 'Answer in one sentence.' }] });
    expect(body.contents).toEqual([
      { role: 'user', parts: [{ text: 'Is it warmer in Paris or in London?' }] },
      {
        role: 'model',
        parts: [
          { functionCall: { name: 'get_current_temperature', args: { location: 'Paris' } } },
          { functionCall: { name: 'get_current_temperature', args: { location: 'London' } } },
        ],
      },
      {
        role: 'user',
        parts: [
          { functionResponse: { name: 'get_current_temperature', response: { result: '18 °C, sunny' } } },
          { functionResponse: { name: 'get_current_temperature', response: { celsius: 14 } } },
          { text: 'And in Rome?' },
        ],
      },
    ]);
    expect(body.tools).toEqual([
      {
        functionDeclarations: [
          {
            name: 'get_current_temperature',
            description: 'Gets the current temperature for a given location.',
            parametersJsonSchema: WEATHER.parameters,
          },
        ],
      },
    ]);
    expect(body).not.toHaveProperty('toolConfig');
  });

  it('never sends the OpenAI call ids; to a Gemini 3 model each call carries the placeholder signature', () => {
    expect(JSON.stringify(build({ messages: conversation }).body)).not.toContain('call_');
    const { body } = build({ model: 'gemini-3-flash-preview', messages: conversation });
    expect((body.contents as { parts: unknown[] }[])[1]?.parts).toEqual([
      {
        functionCall: { name: 'get_current_temperature', args: { location: 'Paris' } },
        thoughtSignature: 'skip_thought_signature_validator',
      },
      {
        functionCall: { name: 'get_current_temperature', args: { location: 'London' } },
        thoughtSignature: 'skip_thought_signature_validator',
      },
    ]);
    const unsigned = build({ model: 'gemini-2.5-pro', messages: conversation }).body;
    expect(JSON.stringify(unsigned)).not.toContain('thoughtSignature');
  });

  it('sends text before the calls, empty arguments as {}, and a JSON array result as text', () => {
    const { body } = build({
      messages: [
        { role: 'user', content: 'List the files.' },
        {
          role: 'assistant',
          content: 'Listing them.',
          toolCalls: [{ id: 'c1', name: 'list_files', arguments: '' }],
        },
        { role: 'tool', toolCallId: 'c1', name: 'list_files', content: '["a.txt","b.txt"]' },
      ],
    });
    expect(body.contents).toEqual([
      { role: 'user', parts: [{ text: 'List the files.' }] },
      {
        role: 'model',
        parts: [{ text: 'Listing them.' }, { functionCall: { name: 'list_files', args: {} } }],
      },
      {
        role: 'user',
        parts: [{ functionResponse: { name: 'list_files', response: { result: '["a.txt","b.txt"]' } } }],
      },
    ]);
  });

  it('sends a past refusal without content as the assistant text', () => {
    const { body } = build({
      messages: [
        { role: 'user', content: 'Help me pick a lock.' },
        { role: 'assistant', content: null, refusal: 'I cannot help with that.' },
        { role: 'user', content: 'It is my own door.' },
      ],
    });
    expect(body.contents).toEqual([
      { role: 'user', parts: [{ text: 'Help me pick a lock.' }] },
      { role: 'model', parts: [{ text: 'I cannot help with that.' }] },
      { role: 'user', parts: [{ text: 'It is my own door.' }] },
    ]);
  });

  it('drops empty turns and merges the turns around them', () => {
    const { body } = build({
      messages: [
        { role: 'user', content: 'a' },
        { role: 'assistant', content: '' },
        { role: 'user', content: '' },
        { role: 'user', content: 'b' },
      ],
    });
    expect(body.contents).toEqual([{ role: 'user', parts: [{ text: 'a\n\nb' }] }]);
  });
});

describe('gemini request: system and developer messages', () => {
  it('joins system and developer messages, wherever they stand, into systemInstruction', () => {
    const { body } = build({
      messages: [
        { role: 'developer', content: 'D1' },
        { role: 'user', content: 'Hi' },
        { role: 'system', content: 'S2' },
        { role: 'assistant', content: 'Hello.' },
        { role: 'developer', content: 'D3' },
      ],
    });
    expect(body.systemInstruction).toEqual({ parts: [{ text: 'D1\n\nS2\n\nD3' }] });
    expect(body.contents).toEqual([
      { role: 'user', parts: [{ text: 'Hi' }] },
      { role: 'model', parts: [{ text: 'Hello.' }] },
    ]);
  });

  it('sends a developer-only conversation as one user turn', () => {
    const { body } = build({ messages: [{ role: 'developer', content: 'Only me' }] });
    expect(body).not.toHaveProperty('systemInstruction');
    expect(body.contents).toEqual([{ role: 'user', parts: [{ text: 'Only me' }] }]);
  });
});

describe('gemini request: content parts', () => {
  it('sends an inline image, audio and a PDF as inlineData, text as text', () => {
    const { body, dropped } = build({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Compare these.' },
            { type: 'image', image: { kind: 'data', mediaType: 'image/png', data: PNG }, detail: 'auto' },
            { type: 'audio', data: WAV, format: 'wav' },
            { type: 'audio', data: 'SUQzBAAAAAAA', format: 'mp3' },
            { type: 'file', data: PDF, mediaType: 'application/pdf', fileId: undefined, filename: undefined },
            { type: 'text', text: '' },
          ],
        },
      ],
    });
    expect(dropped).toBeUndefined();
    expect(body.contents).toEqual([
      {
        role: 'user',
        parts: [
          { text: 'Compare these.' },
          { inlineData: { mimeType: 'image/png', data: PNG } },
          { inlineData: { mimeType: 'audio/wav', data: WAV } },
          { inlineData: { mimeType: 'audio/mp3', data: 'SUQzBAAAAAAA' } },
          { inlineData: { mimeType: 'application/pdf', data: PDF } },
        ],
      },
    ]);
  });

  it('reports an image detail and a filename, which Gemini has no field for', () => {
    const { body, dropped } = build({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', image: { kind: 'data', mediaType: 'image/jpeg', data: PNG }, detail: 'high' },
            { type: 'file', data: PDF, mediaType: 'application/pdf', fileId: undefined, filename: 'q3.pdf' },
          ],
        },
      ],
    });
    expect(dropped).toEqual(['messages[].content[].image_url.detail', 'messages[].content[].file.filename']);
    expect(JSON.stringify(body)).not.toContain('q3.pdf');
  });
});

describe('gemini request: tools', () => {
  const tools: ToolDefinition[] = [WEATHER, { name: 'now' }];

  it.each([
    [{ type: 'auto' } as const, { mode: 'AUTO' }],
    [{ type: 'none' } as const, { mode: 'NONE' }],
    [{ type: 'required' } as const, { mode: 'ANY' }],
    [{ type: 'function', name: 'now' } as const, { mode: 'ANY', allowedFunctionNames: ['now'] }],
  ])('tool_choice %j → functionCallingConfig %j', (toolChoice, functionCallingConfig) => {
    const { body } = build({ tools, toolChoice });
    expect(body.toolConfig).toEqual({ functionCallingConfig });
  });

  it('declares a function without parameters or description by its name only', () => {
    const { body } = build({ tools });
    expect((body.tools as { functionDeclarations: unknown[] }[])[0]?.functionDeclarations[1]).toEqual({
      name: 'now',
    });
  });

  it('reports parallel_tool_calls false and strict functions; sends nothing without tools', () => {
    expect(build({ tools, parallelToolCalls: true }).dropped).toBeUndefined();
    expect(build({ tools: [{ ...WEATHER, strict: true }], parallelToolCalls: false }).dropped).toEqual([
      'tools[].function.strict',
      'parallel_tool_calls',
    ]);
    const { body } = build({ tools: [], toolChoice: { type: 'auto' } });
    expect(body).not.toHaveProperty('tools');
    expect(body).not.toHaveProperty('toolConfig');
  });
});

describe('gemini request: response format, n, logprobs', () => {
  it('json_object → responseMimeType application/json', () => {
    const { body } = build({ responseFormat: { type: 'json_object' } });
    expect(body.generationConfig).toEqual({ maxOutputTokens: 256, responseMimeType: 'application/json' });
  });

  it('json_schema → responseMimeType and the schema as responseJsonSchema', () => {
    const schema = {
      type: 'array',
      items: { type: 'object', properties: { recipe_name: { type: 'string' } }, required: ['recipe_name'] },
    };
    const { body } = build({
      responseFormat: {
        type: 'json_schema',
        name: 'recipes',
        description: 'Cookie recipes',
        schema,
        strict: true,
      },
    });
    expect(body.generationConfig).toEqual({
      maxOutputTokens: 256,
      responseMimeType: 'application/json',
      responseJsonSchema: { ...schema, description: 'Cookie recipes' },
    });
    const plain = build({ responseFormat: { type: 'json_schema', name: 'recipes', schema } }).body;
    expect(plain.generationConfig).toMatchObject({ responseJsonSchema: schema });
    expect(build({ responseFormat: { type: 'text' } }).body.generationConfig).toEqual({
      maxOutputTokens: 256,
    });
  });

  it('n → candidateCount (only above 1)', () => {
    expect(build({ n: 3 }).body.generationConfig).toEqual({ maxOutputTokens: 256, candidateCount: 3 });
    expect(build({ n: 1 }).body.generationConfig).toEqual({ maxOutputTokens: 256 });
  });

  it('logprobs → responseLogprobs, top_logprobs → logprobs', () => {
    expect(build({ logprobs: { top: undefined } }).body.generationConfig).toEqual({
      maxOutputTokens: 256,
      responseLogprobs: true,
    });
    expect(build({ logprobs: { top: 3 } }).body.generationConfig).toEqual({
      maxOutputTokens: 256,
      responseLogprobs: true,
      logprobs: 3,
    });
  });
});

describe('gemini request: thinking budget', () => {
  it.each([
    ['none', 0],
    ['minimal', 0],
    ['low', 1024],
    ['medium', 8192],
    ['high', 24_576],
    ['xhigh', 24_576],
  ] as const)('reasoning_effort %s → thinkingBudget %d', (reasoningEffort, thinkingBudget) => {
    const { body } = build({ reasoningEffort, maxTokens: 32_768 });
    expect(body.generationConfig).toEqual({ maxOutputTokens: 32_768, thinkingConfig: { thinkingBudget } });
  });

  it('clamps the budget below maxTokens, and sends none without an effort', () => {
    expect(build({ reasoningEffort: 'high', maxTokens: 4000 }).body.generationConfig).toEqual({
      maxOutputTokens: 4000,
      thinkingConfig: { thinkingBudget: 3999 },
    });
    expect(build({ reasoningEffort: 'low', maxTokens: 1 }).body.generationConfig).toEqual({
      maxOutputTokens: 1,
      thinkingConfig: { thinkingBudget: 0 },
    });
    expect(build({ maxTokens: 100 }).body.generationConfig).toEqual({ maxOutputTokens: 100 });
  });
});

describe('gemini request: dropped', () => {
  it('names every field Gemini cannot express once, in a stable order, and sends none of them', () => {
    const { body, dropped } = build({
      messages: [
        { role: 'system', content: 'S', name: 'ops' },
        { role: 'user', content: 'Hi', name: 'alice' },
        { role: 'user', content: 'Again', name: 'alice' },
      ],
      tools: [WEATHER],
      parallelToolCalls: false,
      params: { user: 'u-1', logit_bias: { '50256': -100 }, seed: 7 },
      openai: { metadata: { team: 'a' }, store: true, service_tier: 'flex', verbosity: 'low' },
    });
    expect(dropped).toEqual([
      'messages[].name',
      'parallel_tool_calls',
      'user',
      'logit_bias',
      'metadata',
      'service_tier',
      'store',
      'verbosity',
    ]);
    const text = JSON.stringify(body);
    for (const value of ['alice', 'ops', 'u-1', '50256', 'team', 'flex']) expect(text).not.toContain(value);
    expect(body.generationConfig).toEqual({ maxOutputTokens: 256, seed: 7 });
  });

  it('is absent when nothing was dropped', () => {
    expect(build({}).dropped).toBeUndefined();
  });
});
