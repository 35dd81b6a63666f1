import { describe, expect, it } from 'vitest';
import { anthropicAdapter } from '../../src/providers/anthropic/index.js';
import type { ChatMessage, UpstreamChatRequest } from '../../src/providers/types.js';
import { chatRequest, fixture, jsonBody, providerConfig } from './provider-test-helpers.js';

const claude = providerConfig('prov-claude', 'anthropic', 'https://api.anthropic.com', 'claude-sonnet-4-5');

function build(overrides: Partial<UpstreamChatRequest>) {
  const req = anthropicAdapter.buildRequest(claude, chatRequest(overrides));
  return { body: jsonBody(req.body), dropped: req.dropped };
}

function messagesOf(messages: ChatMessage[]): unknown {
  return build({ messages }).body.messages;
}

const WEATHER_TOOL = {
  name: 'get_weather',
  description: 'Get the current weather in a given location',
  parameters: {
    type: 'object',
    properties: { location: { type: 'string', description: 'The city and state, e.g. San Francisco, CA' } },
    required: ['location'],
  },
};

// Shapes from https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use
// (tool_use / tool_result blocks, parallel results in one user message, results first).
describe('anthropic adapter: a tool round trip', () => {
  it('user → assistant tool calls (content null) → two tool results → user becomes three alternating turns', () => {
    const { body, dropped } = build({
      model: 'claude-sonnet-4-5',
      tools: [WEATHER_TOOL],
      messages: [
        { role: 'system', content: 'You are a weather bot.' },
        { role: 'user', content: "What's the weather in SF and NYC?" },
        {
          role: 'assistant',
          content: null,
          toolCalls: [
            { id: 'toolu_01A', name: 'get_weather', arguments: '{"location":"San Francisco, CA"}' },
            { id: 'toolu_01B', name: 'get_weather', arguments: '{"location": "New York, NY"}' },
          ],
        },
        { role: 'tool', toolCallId: 'toolu_01A', name: 'get_weather', content: '15 degrees' },
        { role: 'tool', toolCallId: 'toolu_01B', name: 'get_weather', content: '22 degrees' },
        { role: 'user', content: 'Which one is warmer?' },
      ],
    });
    expect(dropped).toBeUndefined();
    expect(body).toEqual({
      model: 'claude-sonnet-4-5',
      max_tokens: 256,
      system: 'You are a weather bot.',
      messages: [
        { role: 'user', content: "What's the weather in SF and NYC?" },
        {
          role: 'assistant',
          content: [
            {
              type: 'tool_use',
              id: 'toolu_01A',
              name: 'get_weather',
              input: { location: 'San Francisco, CA' },
            },
            { type: 'tool_use', id: 'toolu_01B', name: 'get_weather', input: { location: 'New York, NY' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_01A', content: '15 degrees' },
            { type: 'tool_result', tool_use_id: 'toolu_01B', content: '22 degrees' },
            { type: 'text', text: 'Which one is warmer?' },
          ],
        },
      ],
      tools: [
        {
          name: 'get_weather',
          description: 'Get the current weather in a given location',
          input_schema: WEATHER_TOOL.parameters,
        },
      ],
    });
  });

  it('puts the assistant text before its tool_use blocks', () => {
    expect(
      messagesOf([
        { role: 'user', content: 'Weather in Paris?' },
        {
          role: 'assistant',
          content: "I'll check the current weather in Paris for you.",
          toolCalls: [{ id: 'toolu_1', name: 'get_weather', arguments: '{"location":"Paris"}' }],
        },
        { role: 'tool', toolCallId: 'toolu_1', name: 'get_weather', content: 'sunny' },
      ]),
    ).toEqual([
      { role: 'user', content: 'Weather in Paris?' },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: "I'll check the current weather in Paris for you." },
          { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { location: 'Paris' } },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'sunny' }] },
    ]);
  });

  it('sends empty arguments as an empty input and an empty result without content', () => {
    expect(
      messagesOf([
        { role: 'user', content: 'Roll a die.' },
        { role: 'assistant', content: '', toolCalls: [{ id: 'toolu_2', name: 'roll', arguments: '' }] },
        { role: 'tool', toolCallId: 'toolu_2', name: 'roll', content: '' },
      ]),
    ).toEqual([
      { role: 'user', content: 'Roll a die.' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_2', name: 'roll', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_2' }] },
    ]);
  });
});

describe('anthropic adapter: conversation shape', () => {
  it('joins system and developer messages, wherever they stand, into system', () => {
    const { body } = build({
      messages: [
        { role: 'developer', content: 'Answer in French.' },
        { role: 'user', content: 'Hi' },
        { role: 'system', content: 'Be brief.' },
        { role: 'developer', content: 'No emoji.' },
        { role: 'user', content: 'How are you?' },
      ],
    });
    expect(body.system).toBe('Answer in French.\n\nBe brief.\n\nNo emoji.');
    expect(body.messages).toEqual([{ role: 'user', content: 'Hi\n\nHow are you?' }]);
  });

  it('sends a developer-only conversation as one user turn', () => {
    const { body } = build({ messages: [{ role: 'developer', content: 'Say hi.' }] });
    expect(body).not.toHaveProperty('system');
    expect(body.messages).toEqual([{ role: 'user', content: 'Say hi.' }]);
  });

  it('sends a past refusal as the assistant text when there is no content', () => {
    expect(
      messagesOf([
        { role: 'user', content: 'Help me pick a lock.' },
        { role: 'assistant', content: null, refusal: "I can't help with that." },
        { role: 'user', content: 'OK, then a poem.' },
      ]),
    ).toEqual([
      { role: 'user', content: 'Help me pick a lock.' },
      { role: 'assistant', content: "I can't help with that." },
      { role: 'user', content: 'OK, then a poem.' },
    ]);
  });

  it('never sends empty text: empty blocks and empty turns go, and the turns around them merge', () => {
    expect(
      messagesOf([
        { role: 'user', content: 'one' },
        { role: 'assistant', content: '' },
        { role: 'user', content: '' },
        {
          role: 'user',
          content: [
            { type: 'text', text: '' },
            { type: 'image', image: { kind: 'url', url: 'https://example.com/a.png' }, detail: undefined },
          ],
        },
        { role: 'assistant', content: 'two' },
      ]),
    ).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'one' },
          { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } },
        ],
      },
      { role: 'assistant', content: 'two' },
    ]);
  });

  it('sends a conversation that starts with the assistant as it is (the Messages API takes it)', () => {
    expect(
      messagesOf([
        { role: 'system', content: 'You are a pirate.' },
        { role: 'assistant', content: 'Ahoy! How may I help ye?' },
        { role: 'user', content: 'Tell me about the sea.' },
      ]),
    ).toEqual([
      { role: 'assistant', content: 'Ahoy! How may I help ye?' },
      { role: 'user', content: 'Tell me about the sea.' },
    ]);
  });

  it('reports message names once as messages[].name (a tool result name is the function, not reported)', () => {
    const { body, dropped } = build({
      messages: [
        { role: 'system', content: 'S', name: 'ops' },
        { role: 'user', content: 'Hi', name: 'alice' },
        {
          role: 'assistant',
          content: null,
          toolCalls: [{ id: 't', name: 'f', arguments: '{}' }],
          name: 'bot',
        },
        { role: 'tool', toolCallId: 't', name: 'f', content: 'done' },
      ],
    });
    expect(dropped).toEqual(['messages[].name']);
    expect(JSON.stringify(body)).not.toContain('alice');
  });
});

describe('anthropic adapter: content parts', () => {
  // The shape of https://docs.anthropic.com/en/docs/build-with-claude/vision ("multiple images"): one
  // image inline (base64) and one by URL, each after a text label.
  it('sends images by data and by URL as the vision docs show', () => {
    const expected = JSON.parse(fixture('anthropic-image-request.json')) as {
      messages: [{ content: [unknown, { source: { data: string } }] }];
    };
    const data = expected.messages[0].content[1].source.data;
    const req = anthropicAdapter.buildRequest(
      claude,
      chatRequest({
        model: 'claude-sonnet-4-5',
        maxTokens: 1024,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'Image 1:' },
              { type: 'image', image: { kind: 'data', mediaType: 'image/jpeg', data }, detail: undefined },
              { type: 'text', text: 'Image 2:' },
              {
                type: 'image',
                image: {
                  kind: 'url',
                  url: 'https://upload.wikimedia.org/wikipedia/commons/a/a7/Camponotus_flavomarginatus_ant.jpg',
                },
                detail: 'auto',
              },
              { type: 'text', text: 'How are these images different?' },
            ],
          },
        ],
      }),
    );
    expect(jsonBody(req.body)).toEqual(expected);
    expect(req.dropped).toBeUndefined();
  });

  it('reports an image detail other than auto as dropped', () => {
    const { body, dropped } = build({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', image: { kind: 'url', url: 'https://example.com/a.png' }, detail: 'low' },
            { type: 'image', image: { kind: 'url', url: 'https://example.com/b.png' }, detail: 'high' },
          ],
        },
      ],
    });
    expect(dropped).toEqual(['messages[].content[].image_url.detail']);
    expect(JSON.stringify(body)).not.toContain('detail');
  });

  // https://docs.anthropic.com/en/docs/build-with-claude/pdf-support (base64 PDF `document` block) and
  // https://docs.anthropic.com/en/docs/build-with-claude/citations (plain-text `document` source).
  it('sends a PDF as a base64 document and a plain-text file as a text document', () => {
    const pdf = Buffer.from('%PDF-1.7 tiny').toString('base64');
    const txt = Buffer.from('The grass is green. The sky is blue. — ok', 'utf8').toString('base64');
    expect(
      messagesOf([
        {
          role: 'user',
          content: [
            { type: 'file', data: pdf, mediaType: 'application/pdf', fileId: undefined, filename: undefined },
            { type: 'file', data: txt, mediaType: 'text/plain', fileId: undefined, filename: 'notes.txt' },
            { type: 'text', text: 'Summarise both.' },
          ],
        },
      ]),
    ).toEqual([
      {
        role: 'user',
        content: [
          { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: pdf } },
          {
            type: 'document',
            source: {
              type: 'text',
              media_type: 'text/plain',
              data: 'The grass is green. The sky is blue. — ok',
            },
            title: 'notes.txt',
          },
          { type: 'text', text: 'Summarise both.' },
        ],
      },
    ]);
  });

  it('merges a string turn with a parts turn of the same role into one block list', () => {
    expect(
      messagesOf([
        { role: 'user', content: 'Look:' },
        {
          role: 'user',
          content: [
            {
              type: 'image',
              image: { kind: 'data', mediaType: 'image/png', data: 'iVBORw0KGgo=' },
              detail: undefined,
            },
          ],
        },
      ]),
    ).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Look:' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
        ],
      },
    ]);
  });
});
