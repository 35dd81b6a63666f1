import { describe, expect, it, vi } from 'vitest';
import { createChatRequestValidator } from '../../src/api/validate-chat-request.js';
import { GatewayError } from '../../src/errors.js';

const limits = { maxMessages: 3, maxTokensCeiling: 1000 };

function errorOf(body: unknown): { code: string; message: string; param: string | undefined } {
  const validate = createChatRequestValidator(limits);
  try {
    validate(body);
  } catch (err) {
    if (err instanceof GatewayError) return { code: err.code, message: err.message, param: err.param };
    throw err;
  }
  throw new Error('expected a validation error');
}

const ok = [{ role: 'user', content: 'hi' }];

describe('chat request validation (the published JSON Schema, compiled)', () => {
  it('compiles without strict-mode warnings', () => {
    const warn = vi.spyOn(console, 'warn');
    const log = vi.spyOn(console, 'log');
    createChatRequestValidator(limits);
    expect(warn).not.toHaveBeenCalled();
    expect(log).not.toHaveBeenCalled();
    warn.mockRestore();
    log.mockRestore();
  });

  it('turns a valid body into a ChatRequest: parts joined, nulls dropped, max_completion_tokens wins', () => {
    const validate = createChatRequestValidator(limits);
    const req = validate({
      model: 'auto',
      provider: null,
      messages: [
        { role: 'system', content: 'be brief' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'a' },
            { type: 'text', text: 'b' },
          ],
          name: 'x',
        },
      ],
      max_tokens: 10,
      max_completion_tokens: 20,
      temperature: 0.5,
      stop: 'END',
      seed: null,
      unknown_field: { anything: true },
    });
    expect(req).toEqual({
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'a\nb', name: 'x' },
      ],
      model: 'auto',
      provider: undefined,
      maxTokens: 20,
      params: { temperature: 0.5, stop: ['END'] },
      tools: undefined,
      toolChoice: undefined,
      parallelToolCalls: undefined,
      responseFormat: undefined,
      n: 1,
      logprobs: undefined,
      reasoningEffort: undefined,
      openai: {},
      legacyFunctions: false,
    });
  });

  it.each([
    [null, 'messages'],
    [[], 'messages'],
    [{}, 'messages'],
    [{ messages: [] }, 'messages'],
    [{ messages: [{ content: 'hi' }] }, 'messages[0].role'],
    [{ messages: [...ok, { role: 'robot', content: 'x' }] }, 'messages[1].role'],
    [{ messages: [...ok, { role: 'tool', content: 'x' }] }, 'messages[1].tool_call_id'],
    [
      { messages: [{ role: 'system', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] },
      'messages[0].content[0]',
    ],
    [{ messages: [{ role: 'assistant', content: null }] }, 'messages[0].content'],
    [{ messages: [{ role: 'user', content: [{ type: 'text', text: 5 }] }] }, 'messages[0].content[0].text'],
    [{ messages: [{ role: 'user' }], stream: true, max_tokens: -1 }, 'messages[0].content'],
  ])('invalid_messages "Messages array is required" for %j (param %s)', (body, param) => {
    expect(errorOf(body)).toEqual({ code: 'invalid_messages', message: 'Messages array is required', param });
  });

  it('says how many messages are allowed', () => {
    const e = errorOf({ messages: [...ok, ...ok, ...ok, ...ok] });
    expect(e.code).toBe('invalid_messages');
    expect(e.message).toBe(
      'Messages array is required: at most 3 messages are accepted per request (got 4).',
    );
  });

  it('stream: true comes before other field errors; stream: "yes" is an ordinary bad field', () => {
    expect(errorOf({ messages: ok, stream: true, max_tokens: -1 }).code).toBe('streaming_not_supported');
    expect(errorOf({ messages: ok, stream: 'yes' })).toEqual({
      code: 'invalid_request',
      message: "Invalid value for 'stream': expected false.",
      param: 'stream',
    });
  });

  it.each([
    ['max_tokens', 1001, 'an integer from 1 to 1000'],
    ['temperature', 'hot', 'a number from 0 to 2'],
    ['model', '', 'a non-empty string of at most 256 characters'],
    ['stop', ['a', 'b', 'c', 'd', 'e'], 'a non-empty string or an array of at most 4 non-empty strings'],
  ])('invalid_request names %s and what it accepts', (field, value, expected) => {
    expect(errorOf({ messages: ok, [field]: value })).toEqual({
      code: 'invalid_request',
      message: `Invalid value for '${field}': expected ${expected}.`,
      param: field,
    });
  });
});
