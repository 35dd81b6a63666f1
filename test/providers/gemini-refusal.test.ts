import { describe, expect, it } from 'vitest';
import { geminiAdapter } from '../../src/providers/gemini/index.js';
import type { ContentPart, UpstreamCallSpec } from '../../src/providers/types.js';
import { chatRequest, providerConfig } from './provider-test-helpers.js';

const gemini = providerConfig(
  'prov-gemini',
  'gemini',
  'https://generativelanguage.googleapis.com',
  'gemini-2.5-flash',
);

function refusal(overrides: Partial<UpstreamCallSpec>) {
  const { maxTokens: _maxTokens, ...spec } = chatRequest(overrides);
  return geminiAdapter.refusal(gemini, spec);
}

/** A call whose second message is a user message holding `part` after some text. */
function withPart(part: ContentPart): Partial<UpstreamCallSpec> {
  return {
    messages: [
      { role: 'system', content: 'S' },
      { role: 'user', content: [{ type: 'text', text: 'Look:' }, part] },
    ],
  };
}

describe('gemini refusal', () => {
  it('accepts the plain conversation, n up to 8, top_logprobs up to 20 and every content part it can send', () => {
    expect(refusal({})).toBeUndefined();
    expect(refusal({ n: 8, logprobs: { top: 20 } })).toBeUndefined();
    expect(
      refusal(
        withPart({
          type: 'image',
          image: { kind: 'data', mediaType: 'image/webp', data: 'AAAA' },
          detail: undefined,
        }),
      ),
    ).toBeUndefined();
    expect(refusal(withPart({ type: 'audio', data: 'AAAA', format: 'mp3' }))).toBeUndefined();
    expect(
      refusal(
        withPart({
          type: 'file',
          data: 'AAAA',
          mediaType: 'text/plain',
          fileId: undefined,
          filename: 'notes.txt',
        }),
      ),
    ).toBeUndefined();
    expect(refusal({ openai: { metadata: { a: 'b' }, store: true } })).toBeUndefined();
  });

  it('refuses an image by URL: the gateway never fetches it and Gemini takes none', () => {
    expect(
      refusal(
        withPart({
          type: 'image',
          image: { kind: 'url', url: 'https://example.com/cat.png' },
          detail: 'auto',
        }),
      ),
    ).toEqual({
      param: 'messages[1].content[1]',
      message: 'Gemini does not take images by URL; send the image inline as a data: URL.',
    });
  });

  it('refuses an inline GIF, which Gemini does not read', () => {
    expect(
      refusal(
        withPart({
          type: 'image',
          image: { kind: 'data', mediaType: 'image/gif', data: 'R0lG' },
          detail: undefined,
        }),
      ),
    ).toEqual({
      param: 'messages[1].content[1]',
      message: 'Gemini takes inline images as PNG, JPEG, WebP, HEIC or HEIF only, not image/gif.',
    });
  });

  it('refuses a file by id, and an inline file without a media type', () => {
    expect(
      refusal(
        withPart({
          type: 'file',
          data: undefined,
          mediaType: undefined,
          fileId: 'file-abc',
          filename: undefined,
        }),
      ),
    ).toEqual({
      param: 'messages[1].content[1]',
      message: 'Gemini cannot read a file by id; send the file inline as file_data.',
    });
    expect(
      refusal(
        withPart({ type: 'file', data: 'AAAA', mediaType: undefined, fileId: undefined, filename: 'x' }),
      ),
    ).toMatchObject({
      param: 'messages[1].content[1]',
      message: expect.stringMatching(/^Gemini needs the media type/),
    });
  });

  it('refuses web_search_options (OPENAI_ONLY_FIELDS says refuse)', () => {
    expect(refusal({ openai: { web_search_options: {} } })).toEqual({
      param: 'web_search_options',
      message: 'Gemini does not support web_search_options.',
    });
  });

  it('refuses n above 8', () => {
    expect(refusal({ n: 9 })).toEqual({
      param: 'n',
      message: 'Gemini returns at most 8 choices per request (n).',
    });
  });

  it('refuses top_logprobs above 20', () => {
    expect(refusal({ logprobs: { top: 21 } })).toEqual({
      param: 'top_logprobs',
      message: 'Gemini returns at most 20 alternatives per token (top_logprobs).',
    });
  });

  it('refuses a past tool call whose arguments are not a JSON object', () => {
    for (const args of ['{"city": "Par', '[1,2]', '"Paris"']) {
      expect(
        refusal({
          messages: [
            { role: 'user', content: 'Weather?' },
            {
              role: 'assistant',
              content: null,
              toolCalls: [
                { id: 'a', name: 'weather', arguments: '{}' },
                { id: 'b', name: 'weather', arguments: args },
              ],
            },
          ],
        }),
      ).toEqual({
        param: 'messages[1].tool_calls[1].function.arguments',
        message:
          'Gemini takes the arguments of a past tool call as a JSON object only, nested at most 64 levels.',
      });
    }
  });

  it('names the first problem only', () => {
    expect(
      refusal({
        n: 9,
        ...withPart({
          type: 'image',
          image: { kind: 'url', url: 'https://example.com/a.png' },
          detail: undefined,
        }),
      })?.param,
    ).toBe('n');
  });
});
