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
    null,
    [],
    {},
    { messages: [] },
    { messages: 'hi' },
    { messages: null },
    { messages: { role: 'user' } },
  ])('invalid_messages "Messages array is required" for %j', (body) => {
    expect(errorOf(body)).toEqual({
      code: 'invalid_messages',
      message: 'Messages array is required',
      param: 'messages',
    });
  });

  it.each([
    [{ messages: [{ content: 'hi' }] }, 'messages[0].role', 'messages[0].role is required.'],
    [
      { messages: [...ok, { role: 'bot', content: 'x' }] },
      'messages[1].role',
      'messages[1].role must be one of "system", "developer", "user", "assistant", "tool", "function"; got "bot".',
    ],
    [
      { messages: [{ role: 'user', content: 5 }] },
      'messages[0].content',
      'messages[0].content must be a string or an array of at most 1000 content parts; got 5.',
    ],
    [
      { messages: [{ role: 'user', content: [] }] },
      'messages[0].content',
      'messages[0].content must not be empty.',
    ],
    [
      { messages: [{ role: 'user', content: [{}] }] },
      'messages[0].content[0].type',
      'messages[0].content[0].type is required.',
    ],
    [
      { messages: [{ role: 'user', content: [{ type: 'video' }] }] },
      'messages[0].content[0].type',
      'messages[0].content[0].type must be one of "text", "image_url", "input_audio", "file", "refusal"; got "video".',
    ],
    [
      { messages: [...ok, { role: 'tool', content: 'x' }] },
      'messages[1].tool_call_id',
      'messages[1].tool_call_id is required: a tool message answers a call.',
    ],
    [
      { messages: [{ role: 'system', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] },
      'messages[0].content[0]',
      'messages[0].content[0] is of type "image_url"; a system message takes text parts only.',
    ],
    [
      { messages: [{ role: 'assistant', content: null }] },
      'messages[0].content',
      'messages[0].content is required: an assistant message needs content, tool_calls, function_call or refusal.',
    ],
    [
      { messages: [{ role: 'user', content: [{ type: 'text', text: 5 }] }] },
      'messages[0].content[0].text',
      'messages[0].content[0].text must be a string; got 5.',
    ],
    [
      { messages: [{ role: 'user' }], stream: true, max_tokens: -1 },
      'messages[0].content',
      'messages[0].content is required: a user message needs content.',
    ],
    [{ messages: [null] }, 'messages[0]', 'messages[0] must be an object with "role"; got null.'],
  ])('invalid_messages for %j names %s and says what is wrong with it', (body, param, message) => {
    expect(errorOf(body)).toEqual({ code: 'invalid_messages', message, param });
  });

  it('says how many messages are allowed', () => {
    expect(errorOf({ messages: [...ok, ...ok, ...ok, ...ok] })).toEqual({
      code: 'invalid_messages',
      message: 'messages has 4 messages; at most 3 are accepted.',
      param: 'messages',
    });
  });

  it('stream: true comes before other field errors; stream: "yes" is an ordinary bad field', () => {
    expect(errorOf({ messages: ok, stream: true, max_tokens: -1 }).code).toBe('streaming_not_supported');
    expect(errorOf({ messages: ok, stream: 'yes' })).toEqual({
      code: 'invalid_request',
      message: 'stream must be false; got "yes".',
      param: 'stream',
    });
  });

  it.each([
    ['max_tokens', 1001, 'must be an integer from 1 to 1000; got 1001'],
    ['temperature', 'hot', 'must be a number from 0 to 2; got "hot"'],
    ['model', '', 'must be a non-empty string of at most 256 characters; got ""'],
    ['stop', 5, 'must be a non-empty string or an array of at most 4 non-empty strings; got 5'],
    ['stop', ['a', 'b', 'c', 'd', 'e'], 'has 5 non-empty strings; at most 4 are accepted'],
    [
      'tool_choice',
      'sometimes',
      'must be one of "none", "auto", "required" or an object with "type", "function"; got "sometimes"',
    ],
  ])('invalid_request names %s, what it accepts and what it got', (field, value, expected) => {
    expect(errorOf({ messages: ok, [field]: value })).toEqual({
      code: 'invalid_request',
      message: `${field} ${expected}.`,
      param: field,
    });
  });

  it.each([
    [{ type: 'json_schema', json_schema: { schema: {} } }, 'response_format.json_schema.name', 'is required'],
    [{ type: 'json_schema' }, 'response_format.json_schema', 'is required'],
    [
      { type: 'xml' },
      'response_format.type',
      'must be one of "text", "json_object", "json_schema"; got "xml"',
    ],
  ])('response_format %j: invalid_request naming %s', (format, param, expected) => {
    expect(errorOf({ messages: ok, response_format: format })).toEqual({
      code: 'invalid_request',
      message: `${param} ${expected}.`,
      param,
    });
  });
});
