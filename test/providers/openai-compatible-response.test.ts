import { describe, expect, it } from 'vitest';
import { openaiCompatibleAdapter } from '../../src/providers/openai-compatible/index.js';
import type { ChatResult, UpstreamChatRequest } from '../../src/providers/types.js';
import { catchError, chatRequest, fixture, httpResponse, providerConfig } from './provider-test-helpers.js';

const deepseek = providerConfig(
  'prov-deepseek',
  'openai-compatible',
  'https://api.deepseek.com/v1',
  'deepseek-chat',
);

function parse(body: unknown, request: UpstreamChatRequest = chatRequest()): ChatResult {
  return openaiCompatibleAdapter.parseResponse(deepseek, httpResponse(200, body), request);
}

/** A completion whose choices are `choices`. */
function completion(...choices: unknown[]): Record<string, unknown> {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    model: 'deepseek-chat',
    choices,
    usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 },
  };
}

/** A choice whose message is `message`. */
function choice(message: Record<string, unknown>, finishReason = 'stop', index = 0): Record<string, unknown> {
  return { index, message: { role: 'assistant', ...message }, logprobs: null, finish_reason: finishReason };
}

const GENERATED_ID = /^call_[0-9a-f]{24}$/;

describe('openai-compatible answer: tool calls', () => {
  it("reads OpenAI's function-calling example: no text, one call, arguments as the model wrote them", () => {
    expect(parse(fixture('openai-function-call.json'))).toEqual({
      choices: [
        {
          text: null,
          toolCalls: [
            { id: 'call_abc123', name: 'get_current_weather', arguments: '{\n"location": "Boston, MA"\n}' },
          ],
          finishReason: 'tool_calls',
        },
      ],
      usage: { promptTokens: 82, completionTokens: 17, reasoningTokens: 0 },
      model: 'gpt-4o-mini',
    });
  });

  it('reads parallel tool calls in order', () => {
    const [only] = parse(fixture('openai-parallel-tool-calls.json')).choices;
    expect(only?.text).toBeNull();
    expect(only?.refusal).toBeUndefined();
    expect(only?.finishReason).toBe('tool_calls');
    expect(only?.toolCalls).toEqual([
      { id: 'call_12345xyz', name: 'get_weather', arguments: '{"location":"Paris, France"}' },
      { id: 'call_67890abc', name: 'get_weather', arguments: '{"location":"Bogotá, Colombia"}' },
      { id: 'call_99999def', name: 'send_email', arguments: '{"to":"bob@email.com","body":"Hi bob"}' },
    ]);
  });

  it('serialises arguments an upstream sends as an object, and reads absent arguments as none', () => {
    const result = parse(
      completion(
        choice(
          {
            content: '',
            tool_calls: [
              {
                id: 'call_1',
                type: 'function',
                function: { name: 'get_weather', arguments: { location: 'Paris' } },
              },
              { id: 'call_2', type: 'function', function: { name: 'now' } },
              { id: 'call_3', type: 'function', function: { name: 'noop', arguments: null } },
            ],
          },
          'tool_calls',
        ),
      ),
    );
    expect(result.choices[0]?.text).toBe('');
    expect(result.choices[0]?.toolCalls).toEqual([
      { id: 'call_1', name: 'get_weather', arguments: '{"location":"Paris"}' },
      { id: 'call_2', name: 'now', arguments: '{}' },
      { id: 'call_3', name: 'noop', arguments: '{}' },
    ]);
  });

  it('gives a call without an id a new one, distinct across the whole answer', () => {
    const noId = (name: string) => ({ type: 'function', function: { name, arguments: '{}' } });
    const result = parse(
      completion(
        choice(
          { content: null, tool_calls: [noId('a'), { ...noId('b'), id: '' }, noId('c')] },
          'tool_calls',
          0,
        ),
        choice(
          { content: null, tool_calls: [noId('a'), { ...noId('b'), id: 'call_kept' }] },
          'tool_calls',
          1,
        ),
      ),
      chatRequest({ n: 2 }),
    );
    const ids = result.choices.flatMap((c) => c.toolCalls.map((call) => call.id));
    expect(ids).toHaveLength(5);
    expect(new Set(ids).size).toBe(5);
    expect(ids[4]).toBe('call_kept');
    for (const id of ids.slice(0, 4)) expect(id).toMatch(GENERATED_ID);
    expect(result.choices.flatMap((c) => c.toolCalls.map((call) => call.name))).toEqual([
      'a',
      'b',
      'c',
      'a',
      'b',
    ]);
  });

  it('derives the new ids from the answer and the turn: the same answer gives the same ids, the next turn others', () => {
    const answer = completion(
      choice({ content: null, tool_calls: [{ type: 'function', function: { name: 'f', arguments: '{}' } }] }),
    );
    const id = (request?: UpstreamChatRequest) => parse(answer, request).choices[0]?.toolCalls[0]?.id;
    expect(id()).toMatch(GENERATED_ID);
    expect(id()).toBe(id());
    const nextTurn = chatRequest({
      messages: [
        ...chatRequest().messages,
        { role: 'assistant', content: 'x' },
        { role: 'user', content: 'y' },
      ],
    });
    expect(id(nextTurn)).toMatch(GENERATED_ID);
    expect(id(nextTurn)).not.toBe(id());
    expect(parse({ ...answer, id: 'chatcmpl-2' }).choices[0]?.toolCalls[0]?.id).not.toBe(id());
  });

  it('reads the legacy function_call as one tool call with a new id', () => {
    const [only] = parse(
      completion(
        choice(
          {
            content: null,
            function_call: { name: 'get_current_weather', arguments: '{"location":"Boston, MA"}' },
          },
          'function_call',
        ),
      ),
    ).choices;
    expect(only?.finishReason).toBe('tool_calls');
    expect(only?.toolCalls).toHaveLength(1);
    expect(only?.toolCalls[0]).toMatchObject({
      name: 'get_current_weather',
      arguments: '{"location":"Boston, MA"}',
    });
    expect(only?.toolCalls[0]?.id).toMatch(GENERATED_ID);
  });

  it('keeps the finish reason the upstream gave beside tool calls', () => {
    const call = { id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } };
    const [only] = parse(completion(choice({ content: null, tool_calls: [call] }, 'stop'))).choices;
    expect(only?.finishReason).toBe('stop');
    expect(only?.toolCalls).toHaveLength(1);
  });

  it('reads tool_calls null or empty as no calls', () => {
    expect(parse(completion(choice({ content: 'hi', tool_calls: null }))).choices[0]?.toolCalls).toEqual([]);
    expect(parse(completion(choice({ content: 'hi', tool_calls: [] }))).choices[0]?.toolCalls).toEqual([]);
  });

  it.each([
    ['tool_calls not a list', { content: null, tool_calls: { id: 'call_1' } }],
    ['a call that is not an object', { content: null, tool_calls: ['call_1'] }],
    ['a call without a function', { content: null, tool_calls: [{ id: 'call_1', type: 'function' }] }],
    [
      'a call without a name',
      { content: null, tool_calls: [{ id: 'call_1', function: { arguments: '{}' } }] },
    ],
    ['a function_call without a name', { content: null, function_call: { arguments: '{}' } }],
  ])('%s → bad_response', (_label, message) => {
    expect(catchError(() => parse(completion(choice(message)))).kind).toBe('bad_response');
  });
});

describe('openai-compatible answer: choices', () => {
  it('reads one choice per element, in index order', () => {
    const result = parse(
      completion(
        choice({ content: 'third' }, 'length', 2),
        choice({ content: 'first' }, 'stop', 0),
        choice({ content: 'second' }, 'stop', 1),
      ),
      chatRequest({ n: 3 }),
    );
    expect(result.choices.map((c) => [c.text, c.finishReason])).toEqual([
      ['first', 'stop'],
      ['second', 'stop'],
      ['third', 'length'],
    ]);
  });

  it('keeps the list order of choices without an index', () => {
    const a = { message: { content: 'a' }, finish_reason: 'stop' };
    const b = { message: { content: 'b' }, finish_reason: 'stop' };
    expect(parse(completion(a, b), chatRequest({ n: 2 })).choices.map((c) => c.text)).toEqual(['a', 'b']);
  });

  it('cannot read an answer one of whose choices has no message', () => {
    const error = catchError(() =>
      parse(completion(choice({ content: 'a' }), { index: 1, finish_reason: 'stop' }), chatRequest({ n: 2 })),
    );
    expect(error.kind).toBe('bad_response');
    expect(error.message).toContain('choices[1]');
  });

  it('joins the text parts of list content, skipping the rest, and reads a list without text as no text', () => {
    const parts = [
      { type: 'thinking', thinking: [{ type: 'text', text: 'Let me think.' }] },
      { type: 'text', text: 'Four' },
      { type: 'text', text: '.' },
    ];
    expect(parse(completion(choice({ content: parts }))).choices[0]?.text).toBe('Four.');
    expect(parse(completion(choice({ content: [parts[0]] }))).choices[0]?.text).toBeNull();
    expect(parse(completion(choice({ content: [] }))).choices[0]?.text).toBeNull();
  });
});

describe('openai-compatible answer: structured output and refusals', () => {
  it('reads a structured-output answer as its JSON text', () => {
    const [only] = parse(fixture('openai-structured-output.json')).choices;
    expect(only?.refusal).toBeUndefined();
    expect(JSON.parse(only?.text ?? '')).toMatchObject({
      final_answer: 'x = -15 / 4',
      steps: expect.arrayContaining([{ explanation: 'Simplify the fraction.', output: 'x = -15 / 4' }]),
    });
  });

  it('reads a refusal apart from the text', () => {
    expect(parse(fixture('openai-structured-output-refusal.json')).choices).toEqual([
      {
        text: null,
        toolCalls: [],
        refusal: "I'm sorry, I cannot assist with that request.",
        finishReason: 'stop',
      },
    ]);
  });

  it('reads refusal parts of list content, and ignores a null or empty refusal', () => {
    const parts = [{ type: 'refusal', refusal: 'No.' }];
    expect(parse(completion(choice({ content: parts }))).choices[0]).toMatchObject({
      text: null,
      refusal: 'No.',
    });
    expect(parse(completion(choice({ content: 'ok', refusal: null }))).choices[0]).not.toHaveProperty(
      'refusal',
    );
    expect(parse(completion(choice({ content: 'ok', refusal: '' }))).choices[0]).not.toHaveProperty(
      'refusal',
    );
  });
});

describe('openai-compatible answer: logprobs', () => {
  const asked = chatRequest({ logprobs: { top: 2 } });

  it("passes OpenAI's logprobs object through as it came", () => {
    const recorded = JSON.parse(fixture('openai-logprobs.json')) as {
      choices: [{ logprobs: Record<string, unknown> }];
    };
    const [only] = parse(fixture('openai-logprobs.json'), asked).choices;
    expect(only?.text).toBe('Hello! How can I assist you today?');
    expect(only?.logprobs).toEqual(recorded.choices[0].logprobs);
    expect((only?.logprobs?.content as unknown[]).length).toBe(9);
  });

  it('reads no logprobs as null when they were asked for, and leaves them out when not', () => {
    expect(parse(completion(choice({ content: 'x' })), asked).choices[0]?.logprobs).toBeNull();
    expect(parse(completion({ message: { content: 'x' } }), asked).choices[0]?.logprobs).toBeNull();
    expect(parse(completion(choice({ content: 'x' }))).choices[0]).not.toHaveProperty('logprobs');
  });
});

describe('openai-compatible answer: usage details', () => {
  it('reads the cached and reasoning counts OpenAI reports, zero included', () => {
    expect(parse(fixture('openai-usage-details.json')).usage).toEqual({
      promptTokens: 19,
      completionTokens: 10,
      cachedPromptTokens: 0,
      reasoningTokens: 0,
    });
    expect(parse(fixture('openai-prompt-caching-usage.json')).usage).toEqual({
      promptTokens: 2006,
      completionTokens: 300,
      cachedPromptTokens: 1920,
      reasoningTokens: 0,
    });
  });

  it("reads DeepSeek's reasoning tokens, and not its reasoning text as the answer", () => {
    const result = parse(fixture('openai-deepseek-reasoner.json'));
    expect(result.choices[0]?.text).toBe('Hello! How can I help you today?');
    expect(result.usage).toEqual({
      promptTokens: 10,
      completionTokens: 48,
      cachedPromptTokens: 0,
      reasoningTokens: 38,
    });
  });

  it("reads DeepSeek's prompt_cache_hit_tokens when there are no prompt_tokens_details", () => {
    expect(parse(fixture('openai-deepseek-cache-hit.json')).usage).toEqual({
      promptTokens: 43,
      completionTokens: 12,
      cachedPromptTokens: 28,
    });
  });

  it('prefers prompt_tokens_details.cached_tokens to prompt_cache_hit_tokens', () => {
    const body = {
      ...completion(choice({ content: 'x' })),
      usage: {
        prompt_tokens: 100,
        completion_tokens: 5,
        prompt_tokens_details: { cached_tokens: 64 },
        prompt_cache_hit_tokens: 60,
      },
    };
    expect(parse(body).usage.cachedPromptTokens).toBe(64);
  });

  it('leaves counts out that are not reported, never 0', () => {
    const body = {
      ...completion(choice({ content: 'x' })),
      usage: {
        prompt_tokens: 9,
        completion_tokens: 3,
        prompt_tokens_details: null,
        completion_tokens_details: { accepted_prediction_tokens: 0 },
      },
    };
    const { usage } = parse(body);
    expect(usage).toEqual({ promptTokens: 9, completionTokens: 3 });
    expect(usage).not.toHaveProperty('cachedPromptTokens');
    expect(usage).not.toHaveProperty('reasoningTokens');
  });

  it.each([
    [{ prompt_tokens: 9, completion_tokens: 3, prompt_tokens_details: { cached_tokens: -1 } }],
    [{ prompt_tokens: 9, completion_tokens: 3, prompt_tokens_details: 'none' }],
    [{ prompt_tokens: 9, completion_tokens: 3, completion_tokens_details: { reasoning_tokens: 1.5 } }],
    [{ prompt_tokens: 9, completion_tokens: 3, prompt_cache_hit_tokens: '4' }],
  ])('treats malformed details %j as an unreadable answer', (usage) => {
    const error = catchError(() => parse({ ...completion(choice({ content: 'x' })), usage }));
    expect(error.kind).toBe('bad_response');
  });
});
