import { describe, expect, it } from 'vitest';
import { anthropicAdapter } from '../../src/providers/anthropic/index.js';
import type { ContentPart, ToolDefinition, UpstreamChatRequest } from '../../src/providers/types.js';
import { chatRequest, providerConfig } from './provider-test-helpers.js';

const claude = providerConfig('prov-claude', 'anthropic', 'https://api.anthropic.com', 'claude-sonnet-4-5');
const TOOLS: ToolDefinition[] = [{ name: 'get_weather', parameters: { type: 'object', properties: {} } }];

function refusal(overrides: Partial<UpstreamChatRequest>) {
  return anthropicAdapter.refusal(claude, chatRequest(overrides));
}

function withPart(part: ContentPart): Partial<UpstreamChatRequest> {
  return {
    messages: [
      { role: 'system', content: 'S' },
      { role: 'user', content: [{ type: 'text', text: 'Look:' }, part] },
    ],
  };
}

describe('anthropic adapter: refusal', () => {
  it('accepts a plain call, image URLs, PDFs, plain text and the settings it can translate', () => {
    expect(refusal({})).toBeUndefined();
    expect(
      refusal(
        withPart({ type: 'image', image: { kind: 'url', url: 'https://example.com/a.jpg' }, detail: 'low' }),
      ),
    ).toBeUndefined();
    expect(
      refusal(
        withPart({
          type: 'image',
          image: { kind: 'data', mediaType: 'image/webp', data: 'UklG' },
          detail: undefined,
        }),
      ),
    ).toBeUndefined();
    for (const mediaType of ['application/pdf', 'text/plain']) {
      expect(
        refusal(withPart({ type: 'file', data: 'aGk=', mediaType, fileId: undefined, filename: undefined })),
      ).toBeUndefined();
    }
    expect(
      refusal({
        tools: TOOLS,
        toolChoice: { type: 'auto' },
        reasoningEffort: 'high',
        responseFormat: { type: 'json_schema', name: 'x', schema: { type: 'object' } },
        params: { seed: 1, stop: ['END'] },
        openai: { store: true, metadata: { a: 'b' }, verbosity: 'low' },
      }),
    ).toBeUndefined();
    expect(
      refusal({ responseFormat: { type: 'json_object' }, reasoningEffort: 'minimal', tools: [] }),
    ).toBeUndefined();
    expect(
      refusal({ tools: TOOLS, toolChoice: { type: 'required' }, reasoningEffort: 'none' }),
    ).toBeUndefined();
  });

  it('n > 1', () => {
    expect(refusal({ n: 2 })).toEqual({
      param: 'n',
      message: 'Anthropic Messages cannot return more than one choice per call (n must be 1).',
    });
  });

  it('logprobs', () => {
    expect(refusal({ logprobs: { top: undefined } })).toEqual({
      param: 'logprobs',
      message: 'Anthropic Messages does not return log probabilities.',
    });
  });

  it('reports the first problem only', () => {
    expect(refusal({ n: 3, logprobs: { top: 2 } })?.param).toBe('n');
  });

  it.each<[string, ContentPart, string]>([
    ['audio', { type: 'audio', data: 'UklGRg==', format: 'wav' }, 'cannot take audio input'],
    [
      'a file by id',
      { type: 'file', data: undefined, mediaType: undefined, fileId: 'file-abc', filename: 'a.pdf' },
      'file by id',
    ],
    [
      'a Word file',
      {
        type: 'file',
        data: 'UEsDBA==',
        mediaType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
        fileId: undefined,
        filename: 'a.docx',
      },
      'PDF (application/pdf) or plain text (text/plain) only',
    ],
    [
      'a BMP image',
      { type: 'image', image: { kind: 'data', mediaType: 'image/bmp', data: 'Qk0=' }, detail: undefined },
      'JPEG, PNG, GIF or WebP only',
    ],
  ])('%s → that part', (_label, part, words) => {
    const refused = refusal(withPart(part));
    expect(refused?.param).toBe('messages[1].content[1]');
    expect(refused?.message).toMatch(/^Anthropic Messages /);
    expect(refused?.message).toContain(words);
  });

  it('a past tool call whose arguments are not a JSON object', () => {
    for (const args of ['{"location": "Par', '["a"]', '42']) {
      expect(
        refusal({
          messages: [
            { role: 'user', content: 'Hi' },
            {
              role: 'assistant',
              content: null,
              toolCalls: [
                { id: 't1', name: 'f', arguments: '{}' },
                { id: 't2', name: 'f', arguments: args },
              ],
            },
          ],
        })?.param,
      ).toBe('messages[1].tool_calls[1].function.arguments');
    }
  });

  it('a whitespace-only stop sequence', () => {
    expect(refusal({ params: { stop: ['END', '\n'] } })).toEqual({
      param: 'stop',
      message: 'Anthropic Messages cannot stop on a sequence of whitespace only.',
    });
  });

  it('web_search_options (an OpenAI-only field marked refuse)', () => {
    expect(refusal({ openai: { web_search_options: {} } })).toEqual({
      param: 'web_search_options',
      message: 'Anthropic Messages has no equivalent of web_search_options.',
    });
  });

  it('json_object with the caller tools', () => {
    const refused = refusal({ responseFormat: { type: 'json_object' }, tools: TOOLS });
    expect(refused?.param).toBe('response_format');
    expect(refused?.message).toContain('tools');
  });

  it('json_object with extended thinking', () => {
    const refused = refusal({ responseFormat: { type: 'json_object' }, reasoningEffort: 'low' });
    expect(refused?.param).toBe('response_format');
    expect(refused?.message).toContain('extended thinking');
  });

  it.each([[{ type: 'required' as const }], [{ type: 'function' as const, name: 'get_weather' }]])(
    'extended thinking with tool_choice %j',
    (toolChoice) => {
      expect(refusal({ tools: TOOLS, toolChoice, reasoningEffort: 'medium' })).toEqual({
        param: 'tool_choice',
        message:
          'Anthropic Messages allows only tool_choice auto or none with reasoning_effort (extended thinking).',
      });
      expect(refusal({ tools: TOOLS, toolChoice, reasoningEffort: 'xhigh' })?.param).toBe('tool_choice');
    },
  );

  it('extended thinking with tool_choice auto or none is fine', () => {
    expect(refusal({ tools: TOOLS, toolChoice: { type: 'auto' }, reasoningEffort: 'high' })).toBeUndefined();
    expect(refusal({ tools: TOOLS, toolChoice: { type: 'none' }, reasoningEffort: 'high' })).toBeUndefined();
  });
});
