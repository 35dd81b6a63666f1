import { describe, expect, it } from 'vitest';
import { adapterFor, type ProviderConfig, type WireFormat } from '../../src/providers/index.js';
import { chatRequest, jsonBody, providerConfig } from './provider-test-helpers.js';

const PROVIDERS: Record<WireFormat, ProviderConfig> = {
  'openai-compatible': providerConfig(
    'prov-deepseek',
    'openai-compatible',
    'https://api.deepseek.com/v1',
    'm',
  ),
  anthropic: providerConfig('prov-claude', 'anthropic', 'https://api.anthropic.com', 'claude-sonnet-4-5'),
  gemini: providerConfig(
    'prov-gemini',
    'gemini',
    'https://generativelanguage.googleapis.com',
    'gemini-2.5-flash',
  ),
};

/** A call that sets something of everything, so the stream request is compared on a full body. */
const FULL = chatRequest({
  model: 'gemini-2.5-flash',
  params: { temperature: 0.2, stop: ['END'], seed: 7 },
  tools: [{ name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } }],
  toolChoice: { type: 'auto' },
});

describe('stream requests', () => {
  it.each(Object.keys(PROVIDERS) as WireFormat[])(
    '%s: a request built without options, or with stream: false, is the request that is not streamed',
    (format) => {
      const adapter = adapterFor(format);
      const provider = PROVIDERS[format];
      const plain = adapter.buildRequest(provider, FULL);
      expect(adapter.buildRequest(provider, FULL, {})).toEqual(plain);
      expect(adapter.buildRequest(provider, FULL, { stream: false })).toEqual(plain);
      expect(plain.body).not.toContain('stream_options');
      expect(plain.url).not.toContain('stream');
    },
  );

  it('openai-compatible: stream true and always include_usage, the rest of the body unchanged', () => {
    const adapter = adapterFor('openai-compatible');
    const provider = PROVIDERS['openai-compatible'];
    const plain = adapter.buildRequest(provider, FULL);
    const streamed = adapter.buildRequest(provider, FULL, { stream: true });
    expect(streamed.url).toBe(plain.url);
    expect(streamed.headers).toEqual(plain.headers);
    expect(jsonBody(plain.body).stream).toBe(false);
    expect(jsonBody(streamed.body)).toEqual({
      ...jsonBody(plain.body),
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  it('anthropic: stream true added, the rest of the body unchanged', () => {
    const adapter = adapterFor('anthropic');
    const provider = PROVIDERS.anthropic;
    const plain = adapter.buildRequest(provider, FULL);
    const streamed = adapter.buildRequest(provider, FULL, { stream: true });
    expect(streamed.url).toBe('https://api.anthropic.com/v1/messages');
    expect(streamed.headers).toEqual(plain.headers);
    expect(streamed.dropped).toEqual(plain.dropped);
    expect(jsonBody(plain.body)).not.toHaveProperty('stream');
    expect(jsonBody(streamed.body)).toEqual({ ...jsonBody(plain.body), stream: true });
  });

  it('gemini: streamGenerateContent?alt=sse with the same body, for the provider model and any other', () => {
    const adapter = adapterFor('gemini');
    const provider = PROVIDERS.gemini;
    const plain = adapter.buildRequest(provider, FULL);
    const streamed = adapter.buildRequest(provider, FULL, { stream: true });
    expect(plain.url).toBe(
      'https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent',
    );
    expect(streamed.url).toBe(
      'https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse',
    );
    expect(streamed.body).toBe(plain.body);
    expect(streamed.headers).toEqual(plain.headers);
    const other = adapter.buildRequest(provider, chatRequest({ model: 'a/b c' }), { stream: true });
    expect(other.url).toBe(
      'https://generativelanguage.googleapis.com/v1beta/models/a%2Fb%20c:streamGenerateContent?alt=sse',
    );
    expect(adapter.buildRequest(provider, chatRequest({ model: 'a/b c' })).url).toBe(
      'https://generativelanguage.googleapis.com/v1beta/models/a%2Fb%20c:generateContent',
    );
  });

  it('every adapter has a stream parser', () => {
    for (const format of Object.keys(PROVIDERS) as WireFormat[]) {
      const parser = adapterFor(format).streamParser(PROVIDERS[format], chatRequest());
      expect(parser.done()).toBe(false);
      expect(parser.usage()).toEqual({ promptTokens: undefined, completionTokens: undefined });
      expect(parser.model()).toBeUndefined();
    }
  });
});
