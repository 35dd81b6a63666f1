import { Ajv2020 } from 'ajv/dist/2020.js';
import { countTokens, encode } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, it } from 'vitest';
import { audioTokens, fileTokens, IMAGE_TOKENS } from '../../src/simulator/media.js';
import { composeReply, fullReplyText, promptTokens } from '../../src/simulator/reply.js';
import {
  base64Of,
  errorMessage,
  type Json,
  PNG_1X1,
  post,
  sharedSimulator,
  TIME_SCHEMA,
  WEATHER_SCHEMA,
  weatherArgs,
} from './sim-helpers.js';

const sim = sharedSimulator();

interface ToolCall {
  id: string;
  type: string;
  function: { name: string; arguments: string };
}
interface Choice {
  index: number;
  message: { role: string; content: string | null; refusal: null; tool_calls?: ToolCall[] };
  logprobs: {
    content: Array<{
      token: string;
      logprob: number;
      bytes: number[];
      top_logprobs: Array<{ token: string; logprob: number }>;
    }> | null;
    refusal: null;
  } | null;
  finish_reason: string;
}
interface Completion {
  choices: Choice[];
  usage: {
    prompt_tokens: number;
    completion_tokens: number;
    total_tokens: number;
    prompt_tokens_details: { cached_tokens: number };
    completion_tokens_details: { reasoning_tokens: number };
  };
}

const TOOLS = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: WEATHER_SCHEMA } },
  { type: 'function', function: { name: 'get_time', parameters: TIME_SCHEMA } },
];

function chat(body: Json) {
  return post(sim(), 'openai-compatible', 'deepseek', { model: 'deepseek-chat', ...body });
}

async function completion(body: Json): Promise<Completion> {
  const res = await chat(body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as unknown as Completion;
}

const user = (content: unknown) => ({ role: 'user', content });

describe('openai-compatible: tool calls', () => {
  it('calls the first tool when none is named: content null, call_ ids, arguments from the schema', async () => {
    const c = await completion({ messages: [user('What is it like in Paris?')], tools: TOOLS });
    const choice = c.choices[0] as Choice;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    const calls = choice.message.tool_calls as ToolCall[];
    expect(calls).toHaveLength(1);
    expect(calls[0]?.id).toMatch(/^call_[A-Za-z0-9]{24}$/);
    expect(calls[0]?.type).toBe('function');
    expect(calls[0]?.function.name).toBe('get_weather');
    expect(JSON.parse(calls[0]?.function.arguments as string)).toEqual(weatherArgs('Paris'));
    const args = calls[0]?.function.arguments as string;
    expect(c.usage.completion_tokens).toBe(countTokens('get_weather') + countTokens(args));
    expect(c.usage.prompt_tokens).toBe(
      promptTokens(['What is it like in Paris?']) + countTokens(JSON.stringify(TOOLS)),
    );
  });

  it('calls every tool named in the last user text, in the order of the tools (parallel)', async () => {
    const c = await completion({ messages: [user('Use get_time and GET_WEATHER for Oslo')], tools: TOOLS });
    const calls = c.choices[0]?.message.tool_calls as ToolCall[];
    expect(calls.map((t) => t.function.name)).toEqual(['get_weather', 'get_time']);
    expect(new Set(calls.map((t) => t.id)).size).toBe(2);
    expect(JSON.parse(calls[1]?.function.arguments as string)).toEqual({ zone: 'Oslo' });
  });

  it('parallel_tool_calls false: only the first', async () => {
    const c = await completion({
      messages: [user('Use get_time and get_weather')],
      tools: TOOLS,
      parallel_tool_calls: false,
    });
    expect(c.choices[0]?.message.tool_calls?.map((t) => t.function.name)).toEqual(['get_weather']);
  });

  it('a named tool_choice forces that tool; none and required behave as named', async () => {
    const forced = await completion({
      messages: [user('Tell me about get_weather')],
      tools: TOOLS,
      tool_choice: { type: 'function', function: { name: 'get_time' } },
    });
    expect(forced.choices[0]?.message.tool_calls?.map((t) => t.function.name)).toEqual(['get_time']);
    const none = await completion({ messages: [user('get_time please')], tools: TOOLS, tool_choice: 'none' });
    expect(none.choices[0]?.finish_reason).toBe('stop');
    expect(none.choices[0]?.message.content).toContain('Simulated reply from deepseek to: get_time please');
    expect(none.choices[0]?.message.tool_calls).toBeUndefined();
    const required = await completion({ messages: [user('hi')], tools: TOOLS, tool_choice: 'required' });
    expect(required.choices[0]?.message.tool_calls?.[0]?.function.name).toBe('get_weather');
  });

  it('after the tool messages, the reply quotes each result (cut to 200 characters)', async () => {
    const first = await completion({ messages: [user('get_time and get_weather in Rome')], tools: TOOLS });
    const calls = first.choices[0]?.message.tool_calls as ToolCall[];
    const long = 'x'.repeat(300);
    const messages = [
      user('get_time and get_weather in Rome'),
      { role: 'assistant', content: null, tool_calls: calls },
      { role: 'tool', tool_call_id: calls[0]?.id, content: 'sunny, 21C' },
      { role: 'tool', tool_call_id: calls[1]?.id, content: [{ type: 'text', text: long }] },
    ];
    const c = await completion({ messages, tools: TOOLS });
    const choice = c.choices[0] as Choice;
    expect(choice.finish_reason).toBe('stop');
    expect(choice.message.content).toBe(
      `Simulated reply from deepseek: get_weather returned sunny, 21C; get_time returned ${'x'.repeat(200)}`,
    );
    let calledTokens = 0;
    for (const call of calls)
      calledTokens += countTokens(call.function.name) + countTokens(call.function.arguments);
    expect(c.usage.prompt_tokens).toBe(
      promptTokens(['get_time and get_weather in Rome', '', '', '']) +
        countTokens(JSON.stringify(TOOLS)) +
        calledTokens +
        countTokens('sunny, 21C') +
        countTokens(long),
    );
    expect(c.usage.completion_tokens).toBe(countTokens(choice.message.content as string));
  });
});

describe('openai-compatible: response formats', () => {
  it('json_schema: the text is JSON satisfying the schema', async () => {
    const schema = {
      type: 'object',
      properties: {
        title: { type: 'string' },
        year: { type: 'integer', minimum: 1900 },
        genre: { type: 'string', enum: ['drama', 'comedy'] },
        cast: {
          type: 'array',
          items: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
        },
      },
      required: ['title', 'year', 'genre', 'cast'],
      additionalProperties: false,
    };
    const c = await completion({
      messages: [user('Describe a film about lighthouses.')],
      response_format: { type: 'json_schema', json_schema: { name: 'film', schema, strict: true } },
    });
    const text = c.choices[0]?.message.content as string;
    const value = JSON.parse(text) as Json;
    expect(new Ajv2020().validate(schema, value)).toBe(true);
    expect(value).toEqual({
      title: 'lighthouses',
      year: 1900,
      genre: 'drama',
      cast: [{ name: 'lighthouses' }],
    });
    expect(c.usage.completion_tokens).toBe(countTokens(text));
  });

  it('json_object: {"reply": <the usual text>}, and the prompt must mention JSON', async () => {
    const c = await completion({
      messages: [{ role: 'system', content: 'Answer in JSON.' }, user('Hello')],
      response_format: { type: 'json_object' },
    });
    const text = c.choices[0]?.message.content as string;
    expect(JSON.parse(text)).toEqual({ reply: fullReplyText('deepseek', 'Hello') });
    const refused = await chat({ messages: [user('Hello')], response_format: { type: 'json_object' } });
    expect(refused.status).toBe(400);
    expect(errorMessage(refused.body)).toContain("must contain the word 'json'");
  });
});

describe('openai-compatible: images, audio and files', () => {
  it('are acknowledged in the reply and counted by fixed amounts', async () => {
    const content = [
      { type: 'text', text: 'What is in these?' },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG_1X1}`, detail: 'low' } },
      { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
      { type: 'input_audio', input_audio: { data: base64Of(2500), format: 'wav' } },
      {
        type: 'file',
        file: { file_data: `data:application/pdf;base64,${base64Of(1001)}`, filename: 'a.pdf' },
      },
    ];
    const c = await completion({ messages: [user(content)] });
    const text = c.choices[0]?.message.content as string;
    expect(text).toMatch(
      /^Simulated reply from deepseek \(saw 2 images, 1 audio clip, 1 file\) to: What is in these\?/,
    );
    expect(c.usage.prompt_tokens).toBe(
      promptTokens(['What is in these?']) +
        2 * IMAGE_TOKENS['openai-compatible'] +
        audioTokens(2500) +
        fileTokens(1001),
    );
    expect(IMAGE_TOKENS['openai-compatible']).toBe(765);
    expect(audioTokens(2500)).toBe(96);
    expect(fileTokens(1001)).toBe(251);
  });

  it('refuses media outside user messages and malformed media', async () => {
    const image = { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG_1X1}` } };
    const inSystem = await chat({ messages: [{ role: 'system', content: [image] }, user('hi')] });
    expect(inSystem.status).toBe(400);
    expect(errorMessage(inSystem.body)).toContain("only allowed for messages with role 'user'");
    const svg = await chat({
      messages: [user([{ type: 'image_url', image_url: { url: 'data:image/svg+xml;base64,PHN2Zz4=' } }])],
    });
    expect(svg.status).toBe(400);
    const audio = await chat({
      messages: [user([{ type: 'input_audio', input_audio: { data: base64Of(10), format: 'ogg' } }])],
    });
    expect(audio.status).toBe(400);
    const rawFile = await chat({ messages: [user([{ type: 'file', file: { file_data: base64Of(10) } }])] });
    expect(rawFile.status).toBe(400);
  });
});

describe('openai-compatible: n, logprobs, reasoning', () => {
  it('n choices: choice i > 0 says so; completion tokens are the sum', async () => {
    const c = await completion({ messages: [user('Hello')], n: 3 });
    expect(c.choices.map((ch) => ch.index)).toEqual([0, 1, 2]);
    const base = fullReplyText('deepseek', 'Hello');
    expect(c.choices.map((ch) => ch.message.content)).toEqual([
      base,
      `${base} (choice 2)`,
      `${base} (choice 3)`,
    ]);
    const sum = c.choices.reduce((total, ch) => total + countTokens(ch.message.content as string), 0);
    expect(c.usage.completion_tokens).toBe(sum);
    const capped = await completion({ messages: [user('Hello')], n: 2, max_tokens: 5 });
    expect(capped.choices.every((ch) => ch.finish_reason === 'length')).toBe(true);
    expect(capped.usage.completion_tokens).toBe(10);
  });

  it('logprobs: one entry per o200k token, negative, with top_logprobs alternatives', async () => {
    const c = await completion({ messages: [user('Hello')], logprobs: true, top_logprobs: 3, max_tokens: 6 });
    const choice = c.choices[0] as Choice;
    const content = choice.logprobs?.content ?? [];
    const text = choice.message.content as string;
    expect(content.map((e) => e.token).join('')).toBe(text);
    expect(content).toHaveLength(encode(text).length);
    for (const entry of content) {
      expect(entry.logprob).toBeLessThan(0);
      expect(entry.bytes).toEqual([...Buffer.from(entry.token)]);
      expect(entry.top_logprobs).toHaveLength(3);
      expect(entry.top_logprobs[0]).toMatchObject({ token: entry.token, logprob: entry.logprob });
      expect(entry.top_logprobs[1]?.logprob).toBeLessThan(entry.logprob);
    }
    const again = await completion({
      messages: [user('Hello')],
      logprobs: true,
      top_logprobs: 3,
      max_tokens: 6,
    });
    expect(again.choices[0]?.logprobs).toEqual(choice.logprobs);
    const plain = await completion({ messages: [user('Hello')] });
    expect(plain.choices[0]?.logprobs).toBeNull();
  });

  it.each([
    ['low', 16],
    ['medium', 32],
    ['high', 64],
    ['minimal', 0],
    ['none', 0],
  ] as const)(
    'reasoning_effort %s: %i reasoning tokens, part of completion_tokens',
    async (effort, tokens) => {
      const c = await completion({ messages: [user('Hello')], reasoning_effort: effort });
      const text = c.choices[0]?.message.content as string;
      expect(text).toBe(fullReplyText('deepseek', 'Hello'));
      expect(c.usage.completion_tokens_details.reasoning_tokens).toBe(tokens);
      expect(c.usage.completion_tokens).toBe(countTokens(text) + tokens);
      expect(c.usage.prompt_tokens_details).toEqual({ cached_tokens: 0 });
    },
  );

  it('reasoning plus text never pass the cap: the text is truncated first', async () => {
    const c = await completion({ messages: [user('Hello')], reasoning_effort: 'high', max_tokens: 70 });
    expect(c.usage.completion_tokens).toBe(70);
    expect(countTokens(c.choices[0]?.message.content as string)).toBe(6);
    expect(c.choices[0]?.finish_reason).toBe('length');
    const all = await completion({ messages: [user('Hello')], reasoning_effort: 'high', max_tokens: 10 });
    expect(all.choices[0]?.message.content).toBe('');
    expect(all.usage.completion_tokens).toBe(10);
    expect(all.usage.completion_tokens_details.reasoning_tokens).toBe(10);
  });
});

describe('openai-compatible: a plain text request is answered and counted as before', () => {
  it('same text, same usage numbers', async () => {
    const messages = [{ role: 'system', content: 'Be brief.' }, user([{ type: 'text', text: 'Hello' }])];
    const c = await completion({ messages, max_tokens: 30, stop: ['harbor'] });
    const reply = composeReply('deepseek', 'Hello', 30, ['harbor']);
    expect(c.choices).toHaveLength(1);
    expect(c.choices[0]?.message).toEqual({ role: 'assistant', content: reply.text, refusal: null });
    expect(c.usage.prompt_tokens).toBe(promptTokens(['Be brief.', 'Hello']));
    expect(c.usage.completion_tokens).toBe(reply.completionTokens);
    expect(c.usage.completion_tokens_details.reasoning_tokens).toBe(0);
  });
});

describe('openai-compatible: validation as OpenAI does it', () => {
  const call = {
    id: 'call_1',
    type: 'function',
    function: { name: 'get_time', arguments: '{"zone":"UTC"}' },
  };

  it.each([
    [
      'a tool message with no preceding tool_calls',
      [user('hi'), { role: 'tool', tool_call_id: 'call_1', content: 'x' }],
      "must be a response to a preceeding message with 'tool_calls'",
    ],
    [
      'a tool message answering an unknown id',
      [
        user('hi'),
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: 'call_2', content: 'x' },
      ],
      "'tool_call_id' of 'call_2' not found",
    ],
    [
      'a tool call left unanswered before the next message',
      [user('hi'), { role: 'assistant', content: null, tool_calls: [call] }, user('and?')],
      'did not have response messages: call_1',
    ],
    [
      'a tool call left unanswered at the end',
      [user('hi'), { role: 'assistant', content: null, tool_calls: [call] }],
      'did not have response messages: call_1',
    ],
    [
      'an assistant message with content null and no tool calls',
      [user('hi'), { role: 'assistant', content: null }, user('x')],
      'expected a string, got null',
    ],
  ])('%s → 400', async (_name, messages, wording) => {
    const res = await chat({ messages, tools: TOOLS });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: { type: 'invalid_request_error' } });
    expect(errorMessage(res.body)).toContain(wording);
  });

  it.each([
    [
      'tool_choice naming an unknown function',
      { tools: TOOLS, tool_choice: { type: 'function', function: { name: 'nope' } } },
      'tool_choice.function.name',
    ],
    ['tool_choice without tools', { tool_choice: 'auto' }, 'tool_choice'],
    ['parallel_tool_calls without tools', { parallel_tool_calls: false }, 'parallel_tool_calls'],
    ['an empty tools array', { tools: [] }, 'tools'],
    [
      'a bad function name',
      { tools: [{ type: 'function', function: { name: 'has space' } }] },
      'tools[0].function.name',
    ],
    ['top_logprobs without logprobs', { top_logprobs: 2 }, 'top_logprobs'],
    ['top_logprobs above 20', { logprobs: true, top_logprobs: 21 }, 'top_logprobs'],
    ['n of 0', { n: 0 }, 'n'],
    ['an unknown reasoning_effort', { reasoning_effort: 'extreme' }, 'reasoning_effort'],
    [
      'json_schema without a name',
      { response_format: { type: 'json_schema', json_schema: { schema: {} } } },
      'response_format.json_schema.name',
    ],
    ['an unknown response_format type', { response_format: { type: 'yaml' } }, 'response_format.type'],
    ['temperature above 2', { temperature: 2.5 }, 'temperature'],
  ])('%s → 400 naming the param', async (_name, extra, param) => {
    const res = await chat({ messages: [user('hi')], ...extra });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: { type: 'invalid_request_error', param } });
  });

  it('ignores fields it does not know, and accepts the documented ones', async () => {
    const c = await completion({
      messages: [user('hi')],
      seed: 7,
      logit_bias: { '1234': -5 },
      user: 'u-1',
      metadata: { team: 'a' },
      store: false,
      some_vendor_extension: { x: 1 },
    });
    expect(c.choices[0]?.message.content).toBe(fullReplyText('deepseek', 'hi'));
  });
});
