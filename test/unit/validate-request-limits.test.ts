import { describe, expect, it } from 'vitest';
import { createChatRequestValidator } from '../../src/api/validate-chat-request.js';
import { GatewayError } from '../../src/errors.js';

const MAX_MESSAGES = 50;
/** The documented limits (docs/api.md, "Limits"), written out: a change to one is a change of the API. */
const LIST_LIMITS = {
  contentParts: 1000,
  tools: 128,
  toolCalls: 128,
  stop: 4,
  logitBias: 300,
  metadata: 16,
  modalities: 2,
};
const validate = createChatRequestValidator({ maxMessages: MAX_MESSAGES, maxTokensCeiling: 100_000 });

function errorOf(body: unknown): { code: string; message: string; param: string | undefined } {
  try {
    validate(body);
  } catch (err) {
    if (err instanceof GatewayError) return { code: err.code, message: err.message, param: err.param };
    throw err;
  }
  throw new Error('expected a validation error');
}

/**
 * `target` behind a proxy that counts how many of its items (array indexes, or an object's own keys) are
 * read: how far the validator walked the list.
 */
function counted<T extends object>(target: T): { value: T; reads: () => number } {
  let reads = 0;
  const value = new Proxy(target, {
    get(t, key, receiver) {
      if (typeof key === 'string' && Object.hasOwn(t, key) && key !== 'length') reads++;
      return Reflect.get(t, key, receiver);
    },
  });
  return { value, reads: () => reads };
}

const user = { role: 'user', content: 'hi' };
const call = { id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } };
const keys = (n: number, value: unknown): Record<string, unknown> =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [String(i), value]));

describe('every list of a request is bounded, its length checked before any item is read', () => {
  // [param, its limit, what its items are called, the body around a list of n items]
  const lists: Array<[string, number, string, (list: object) => Record<string, unknown>]> = [
    ['messages', MAX_MESSAGES, 'messages', (list) => ({ messages: list })],
    [
      'messages[0].content',
      LIST_LIMITS.contentParts,
      'content parts',
      (list) => ({ messages: [{ role: 'user', content: list }] }),
    ],
    [
      'messages[1].tool_calls',
      LIST_LIMITS.toolCalls,
      'tool calls',
      (list) => ({ messages: [user, { role: 'assistant', content: null, tool_calls: list }] }),
    ],
    ['tools', LIST_LIMITS.tools, 'tools', (list) => ({ messages: [user], tools: list })],
    ['functions', LIST_LIMITS.tools, 'functions', (list) => ({ messages: [user], functions: list })],
    ['stop', LIST_LIMITS.stop, 'non-empty strings', (list) => ({ messages: [user], stop: list })],
    ['modalities', LIST_LIMITS.modalities, 'items', (list) => ({ messages: [user], modalities: list })],
  ];

  it.each(lists)(
    '%s: at most %i, refused unread past it, naming the field and the count',
    (param, limit, noun, body) => {
      const over = 10 * limit + 7;
      // Items that would each be an error of their own, were they read.
      const list = counted(new Array(over).fill({}));
      const e = errorOf(body(list.value));
      expect(e).toEqual({
        code: param.startsWith('messages') ? 'invalid_messages' : 'invalid_request',
        message: `${param} has ${over} ${noun}; at most ${limit} are accepted.`,
        param,
      });
      expect(list.reads()).toBe(0);
    },
  );

  it.each([
    ['logit_bias', LIST_LIMITS.logitBias, 'not a number'],
    ['metadata', LIST_LIMITS.metadata, 5],
  ])('%s: at most %i keys, refused unread past it', (param, limit, value) => {
    const over = 10 * limit + 7;
    // Values that would each be an error of their own, were they read.
    const map = counted(keys(over, value));
    expect(errorOf({ messages: [user], [param]: map.value })).toEqual({
      code: 'invalid_request',
      message: `${param} has ${over} keys; at most ${limit} are accepted.`,
      param,
    });
    expect(map.reads()).toBe(0);
  });

  it("the finding's bodies: 1,390,000 content parts and 400,000 tools are refused without reading one", () => {
    const parts = counted(new Array(1_390_000).fill({}));
    expect(errorOf({ messages: [{ role: 'user', content: parts.value }] })).toEqual({
      code: 'invalid_messages',
      message: `messages[0].content has 1390000 content parts; at most ${LIST_LIMITS.contentParts} are accepted.`,
      param: 'messages[0].content',
    });
    expect(parts.reads()).toBe(0);

    const tools = counted(new Array(400_000).fill({}));
    expect(errorOf({ messages: [user], tools: tools.value })).toEqual({
      code: 'invalid_request',
      message: `tools has 400000 tools; at most ${LIST_LIMITS.tools} are accepted.`,
      param: 'tools',
    });
    expect(tools.reads()).toBe(0);
  });

  it('stops at the first bad item of a list within its limit', () => {
    const parts = counted(new Array(LIST_LIMITS.contentParts).fill({}));
    expect(errorOf({ messages: [{ role: 'user', content: parts.value }] }).param).toBe(
      'messages[0].content[0].type',
    );
    expect(parts.reads()).toBe(1);
    const tools = counted(new Array(LIST_LIMITS.tools).fill({}));
    expect(errorOf({ messages: [user], tools: tools.value }).param).toBe('tools[0].type');
    expect(tools.reads()).toBe(1);
  });

  it('accepts a request with every list at its limit', () => {
    const tools = Array.from({ length: LIST_LIMITS.tools }, (_, i) => ({
      type: 'function',
      function: { name: `f${i}` },
    }));
    const request = validate({
      messages: [
        ...new Array(MAX_MESSAGES - 2).fill(user),
        {
          role: 'user',
          content: new Array(LIST_LIMITS.contentParts).fill({ type: 'text', text: 'a' }),
        },
        {
          role: 'assistant',
          content: null,
          tool_calls: Array.from({ length: LIST_LIMITS.toolCalls }, (_, i) => ({ ...call, id: `c${i}` })),
        },
      ],
      tools,
      stop: new Array(LIST_LIMITS.stop).fill('END'),
      logit_bias: keys(LIST_LIMITS.logitBias, 1),
      metadata: keys(LIST_LIMITS.metadata, 'x'),
      modalities: ['text'],
    });
    expect(request.messages).toHaveLength(MAX_MESSAGES);
    expect(request.tools).toHaveLength(LIST_LIMITS.tools);
  });
});
