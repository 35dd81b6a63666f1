import { Ajv2020 } from 'ajv/dist/2020.js';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, it } from 'vitest';
import { signThinking, THINKING_TOKENS } from '../../src/simulator/formats/anthropic-blocks.js';
import { fileTokens, IMAGE_TOKENS } from '../../src/simulator/media.js';
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

type Block =
  | { type: 'text'; text: string }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'tool_use'; id: string; name: string; input: Json };
interface Message {
  content: Block[];
  stop_reason: string;
  stop_sequence: string | null;
  usage: {
    input_tokens: number;
    output_tokens: number;
    cache_creation_input_tokens: number;
    cache_read_input_tokens: number;
    output_tokens_details?: { thinking_tokens: number };
  };
}

const TOOLS = [
  { name: 'get_weather', description: 'Weather', input_schema: WEATHER_SCHEMA },
  { name: 'get_time', input_schema: TIME_SCHEMA },
];

function send(body: Json) {
  return post(sim(), 'anthropic', 'claude', { model: 'claude-sonnet-4-5', max_tokens: 2048, ...body });
}

async function message(body: Json): Promise<Message> {
  const res = await send(body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as unknown as Message;
}

const user = (content: unknown) => ({ role: 'user', content });
const toolUses = (m: Message) =>
  m.content.filter((b): b is Extract<Block, { type: 'tool_use' }> => b.type === 'tool_use');

describe('anthropic: tool use', () => {
  it('auto: a short text block, then tool_use blocks with toolu_ ids; stop_reason tool_use', async () => {
    const m = await message({ messages: [user('What is it like in Paris?')], tools: TOOLS });
    expect(m.stop_reason).toBe('tool_use');
    expect(m.content[0]).toEqual({ type: 'text', text: "I'll call get_weather." });
    const uses = toolUses(m);
    expect(uses).toHaveLength(1);
    expect(uses[0]?.id).toMatch(/^toolu_01[A-Za-z0-9]{22}$/);
    expect(uses[0]?.name).toBe('get_weather');
    expect(uses[0]?.input).toEqual(weatherArgs('Paris'));
    expect(m.usage.output_tokens).toBe(
      countTokens("I'll call get_weather.") +
        countTokens('get_weather') +
        countTokens(JSON.stringify(weatherArgs('Paris'))),
    );
    expect(m.usage.input_tokens).toBe(
      promptTokens(['What is it like in Paris?']) + countTokens(JSON.stringify(TOOLS)),
    );
    expect(m.usage).toMatchObject({ cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });
  });

  it('calls every tool named (parallel), or only the first with disable_parallel_tool_use', async () => {
    const both = await message({ messages: [user('get_time then get_weather')], tools: TOOLS });
    expect(toolUses(both).map((u) => u.name)).toEqual(['get_weather', 'get_time']);
    const one = await message({
      messages: [user('get_time then get_weather')],
      tools: TOOLS,
      tool_choice: { type: 'auto', disable_parallel_tool_use: true },
    });
    expect(toolUses(one).map((u) => u.name)).toEqual(['get_weather']);
  });

  it('tool_choice tool forces that tool, without a text block; any forces one; none writes text', async () => {
    const forced = await message({
      messages: [user('about get_weather')],
      tools: TOOLS,
      tool_choice: { type: 'tool', name: 'get_time' },
    });
    expect(forced.content.map((b) => b.type)).toEqual(['tool_use']);
    expect(toolUses(forced)[0]?.name).toBe('get_time');
    const any = await message({ messages: [user('hi')], tools: TOOLS, tool_choice: { type: 'any' } });
    expect(any.content.map((b) => b.type)).toEqual(['tool_use']);
    const none = await message({ messages: [user('get_time')], tools: TOOLS, tool_choice: { type: 'none' } });
    expect(none.stop_reason).toBe('end_turn');
    expect(none.content).toEqual([{ type: 'text', text: fullReplyText('claude', 'get_time') }]);
  });

  it('after tool_result blocks, the reply quotes each result', async () => {
    const first = await message({ messages: [user('get_time and get_weather in Rome')], tools: TOOLS });
    const uses = toolUses(first);
    const messages = [
      user('get_time and get_weather in Rome'),
      { role: 'assistant', content: first.content },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: uses[1]?.id, content: [{ type: 'text', text: '09:30' }] },
          { type: 'tool_result', tool_use_id: uses[0]?.id, content: 'rain', is_error: false },
        ],
      },
    ];
    const m = await message({ messages, tools: TOOLS });
    expect(m.stop_reason).toBe('end_turn');
    expect(m.content).toEqual([
      {
        type: 'text',
        text: 'Simulated reply from claude: get_time returned 09:30; get_weather returned rain',
      },
    ]);
    let calls = 0;
    for (const u of uses) calls += countTokens(u.name) + countTokens(JSON.stringify(u.input));
    expect(m.usage.input_tokens).toBe(
      promptTokens(['get_time and get_weather in Rome', "I'll call get_weather and get_time.", '']) +
        countTokens(JSON.stringify(TOOLS)) +
        calls +
        countTokens('09:30') +
        countTokens('rain'),
    );
  });
});

describe('anthropic: structured output, media, thinking', () => {
  it('output_config.format json_schema: the text satisfies the schema', async () => {
    const schema = {
      type: 'object',
      properties: {
        answer: { type: 'string' },
        score: { type: 'number', minimum: 0.5 },
        ok: { type: 'boolean' },
      },
      required: ['answer', 'score', 'ok'],
      additionalProperties: false,
    };
    const m = await message({
      messages: [user('Rate the harbor!')],
      output_config: { format: { type: 'json_schema', schema } },
    });
    const text = (m.content[0] as { text: string }).text;
    const value = JSON.parse(text) as Json;
    expect(new Ajv2020().validate(schema, value)).toBe(true);
    expect(value).toEqual({ answer: 'harbor', score: 0.5, ok: true });
  });

  it('images and documents are acknowledged and counted', async () => {
    const content = [
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_1X1 } },
      { type: 'image', source: { type: 'url', url: 'https://example.com/a.jpg' } },
      { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: base64Of(400) } },
      { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'plain words' } },
      { type: 'text', text: 'Compare them' },
    ];
    const m = await message({ messages: [user(content)] });
    expect((m.content[0] as { text: string }).text).toMatch(
      /^Simulated reply from claude \(saw 2 images, 2 files\) to: Compare them/,
    );
    expect(m.usage.input_tokens).toBe(
      promptTokens(['Compare them']) + 2 * IMAGE_TOKENS.anthropic + fileTokens(400) + fileTokens(11),
    );
    expect(IMAGE_TOKENS.anthropic).toBe(1568);
  });

  it('thinking: a signed thinking block first, 24 tokens in output_tokens', async () => {
    const m = await message({
      messages: [user('Hello')],
      thinking: { type: 'enabled', budget_tokens: 1024 },
    });
    expect(m.content[0]).toEqual({
      type: 'thinking',
      thinking: 'Simulated thinking.',
      signature: signThinking('Simulated thinking.'),
    });
    const text = (m.content[1] as { text: string }).text;
    expect(text).toBe(fullReplyText('claude', 'Hello'));
    expect(m.usage.output_tokens).toBe(countTokens(text) + THINKING_TOKENS);
    expect(m.usage.output_tokens_details).toEqual({ thinking_tokens: 24 });
  });

  it('thinking in a tool loop: the signed thinking block is accepted back; a missing or altered one is refused', async () => {
    const tools = [TOOLS[1]];
    const thinking = { type: 'enabled', budget_tokens: 1024 };
    const first = await message({ messages: [user('get_time in Lima')], tools, thinking });
    expect(first.content.map((b) => b.type)).toEqual(['thinking', 'text', 'tool_use']);
    const use = toolUses(first)[0];
    const result = {
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: use?.id, content: '10:00' }],
    };
    const ok = await message({
      messages: [user('get_time in Lima'), { role: 'assistant', content: first.content }, result],
      tools,
      thinking,
    });
    expect(ok.content.map((b) => b.type)).toEqual(['thinking', 'text']);
    const withoutThinking = first.content.filter((b) => b.type !== 'thinking');
    const missing = await send({
      messages: [user('get_time in Lima'), { role: 'assistant', content: withoutThinking }, result],
      tools,
      thinking,
    });
    expect(missing.status).toBe(400);
    expect(errorMessage(missing.body)).toContain(
      'Expected `thinking` or `redacted_thinking`, but found `text`',
    );
    const altered = first.content.map((b) => (b.type === 'thinking' ? { ...b, thinking: 'Edited.' } : b));
    const tampered = await send({
      messages: [user('get_time in Lima'), { role: 'assistant', content: altered }, result],
      tools,
      thinking,
    });
    expect(tampered.status).toBe(400);
    expect(errorMessage(tampered.body)).toContain('Invalid `signature` in `thinking` block');
  });

  it('a cap below thinking + text truncates the text first', async () => {
    const m = await message({ messages: [user('Hello')], max_tokens: 30 });
    expect(m.usage.output_tokens).toBe(30);
    const t = await message({
      messages: [user('Hello')],
      max_tokens: 1100,
      thinking: { type: 'enabled', budget_tokens: 1024 },
    });
    expect(t.usage.output_tokens).toBe(
      THINKING_TOKENS + countTokens((t.content[1] as { text: string }).text),
    );
  });
});

describe('anthropic: a plain text request is answered and counted as before', () => {
  it('same text, same usage numbers, no thinking details', async () => {
    const m = await message({
      system: 'Be brief.',
      messages: [
        user('Hi'),
        { role: 'assistant', content: 'Hello!' },
        user([{ type: 'text', text: 'Go on' }]),
      ],
      max_tokens: 40,
      stop_sequences: ['quiet'],
    });
    const reply = composeReply('claude', 'Go on', 40, ['quiet']);
    expect(m.content).toEqual([{ type: 'text', text: reply.text }]);
    expect(m.usage).toEqual({
      input_tokens: promptTokens(['Be brief.', 'Hi', 'Hello!', 'Go on']),
      output_tokens: reply.completionTokens,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    });
  });
});

describe('anthropic: validation as the Messages API does it', () => {
  const use = { type: 'tool_use', id: 'toolu_01abc', name: 'get_time', input: { zone: 'UTC' } };
  const result = (id: string) => ({ type: 'tool_result', tool_use_id: id, content: 'ok' });

  it.each([
    [
      'a tool_result answering no tool_use of the previous turn',
      [
        user('hi'),
        { role: 'assistant', content: [use] },
        user([result('toolu_01abc'), result('toolu_other')]),
      ],
      'unexpected `tool_use_id` found in `tool_result` blocks: toolu_other',
    ],
    ['a tool_result with no previous turn', [user([result('toolu_01abc')])], 'unexpected `tool_use_id`'],
    [
      'a tool_use left unanswered',
      [user('hi'), { role: 'assistant', content: [use] }, user('and?')],
      '`tool_use` ids were found without `tool_result` blocks immediately after: toolu_01abc',
    ],
    [
      'a tool_result after text in its turn',
      [
        user('hi'),
        { role: 'assistant', content: [use] },
        user([{ type: 'text', text: 'here:' }, result('toolu_01abc')]),
      ],
      'Did not find 1 `tool_result` block(s) at the beginning of this message',
    ],
    [
      'an empty text block',
      [user([{ type: 'text', text: '' }])],
      'messages: text content blocks must be non-empty',
    ],
    [
      'a whitespace text block',
      [user([{ type: 'text', text: '  ' }])],
      'text content blocks must contain non-whitespace text',
    ],
    [
      'an empty message',
      [user('hi'), { role: 'assistant', content: '' }, user('x')],
      'all messages must have non-empty content',
    ],
    [
      'a first message from the assistant',
      [{ role: 'assistant', content: 'Hi' }, user('hi')],
      'first message must use the "user" role',
    ],
    [
      'a tool_use in a user turn',
      [user([use])],
      '`tool_use` blocks are only allowed in `assistant` messages',
    ],
    [
      'a bad tool_use id',
      [user('hi'), { role: 'assistant', content: [{ ...use, id: 'call.1' }] }, user('x')],
      "String should match pattern '^[a-zA-Z0-9_-]+$'",
    ],
    [
      'a tool_use input that is not an object',
      [user('hi'), { role: 'assistant', content: [{ ...use, input: '{}' }] }, user('x')],
      'Input should be a valid dictionary',
    ],
    [
      'an image of an unsupported type',
      [user([{ type: 'image', source: { type: 'base64', media_type: 'image/bmp', data: PNG_1X1 } }])],
      'media_type',
    ],
    [
      'an OpenAI image part',
      [user([{ type: 'image_url', image_url: { url: 'https://x' } }])],
      "Input tag 'image_url'",
    ],
  ])('%s → 400', async (_name, messages, wording) => {
    const res = await send({ messages, tools: [{ name: 'get_time', input_schema: TIME_SCHEMA }] });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect(errorMessage(res.body)).toContain(wording);
  });

  it.each([
    [
      'tool_choice naming an unknown tool',
      { tools: TOOLS, tool_choice: { type: 'tool', name: 'nope' } },
      "Tool 'nope' not found",
    ],
    [
      'tool_choice any without tools',
      { tool_choice: { type: 'any' } },
      'tool_choice may only be specified while providing tools',
    ],
    [
      'a budget below 1024',
      { thinking: { type: 'enabled', budget_tokens: 1000 } },
      'greater than or equal to 1024',
    ],
    [
      'a budget not below max_tokens',
      { max_tokens: 1024, thinking: { type: 'enabled', budget_tokens: 1024 } },
      '`max_tokens` must be greater than `thinking.budget_tokens`',
    ],
    [
      'thinking with a forced tool',
      { tools: TOOLS, tool_choice: { type: 'any' }, thinking: { type: 'enabled', budget_tokens: 1024 } },
      'Thinking may not be enabled when tool_choice forces tool use.',
    ],
    [
      'thinking with temperature 0.5',
      { temperature: 0.5, thinking: { type: 'adaptive' } },
      '`temperature` may only be set to 1',
    ],
    ['temperature above 1', { temperature: 1.5 }, 'temperature: Input should be less than or equal to 1'],
    [
      'an OpenAI field',
      { response_format: { type: 'json_object' } },
      'response_format: Extra inputs are not permitted',
    ],
    [
      'an unknown metadata key',
      { metadata: { user_id: 'u', team: 'a' } },
      'metadata.team: Extra inputs are not permitted',
    ],
    [
      'an input_schema that is not an object schema',
      { tools: [{ name: 'x', input_schema: { type: 'string' } }] },
      "input_schema.type: Input should be 'object'",
    ],
    ['a tool without input_schema', { tools: [{ name: 'x' }] }, 'input_schema: Field required'],
    ['duplicate tool names', { tools: [TOOLS[1], TOOLS[1]] }, 'Tool names must be unique'],
    [
      'an empty system text block',
      { system: [{ type: 'text', text: '' }] },
      'system: text content blocks must be non-empty',
    ],
  ])('%s → 400', async (_name, extra, wording) => {
    const res = await send({ messages: [user('hi')], ...extra });
    expect(res.status).toBe(400);
    expect(errorMessage(res.body)).toContain(wording);
  });

  it('consecutive same-role messages form one turn, as the API combines them', async () => {
    const history = [
      user('hi'),
      { role: 'assistant', content: [{ type: 'text', text: 'Checking.' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_01x', name: 'get_time', input: {} }] },
      user([{ type: 'tool_result', tool_use_id: 'toolu_01x', content: 'noon' }]),
    ];
    const m = await message({ messages: history, tools: [TOOLS[1]] });
    expect(m.stop_reason).toBe('end_turn');
    expect(m.content).toEqual([
      { type: 'text', text: 'Simulated reply from claude: get_time returned noon' },
    ]);
    // Text of the user's own after the results makes the turn a user message (as in OpenAI's format, a
    // user message after the tool messages): the model calls the tool again.
    const again = await message({ messages: [...history, user('and in Lima?')], tools: [TOOLS[1]] });
    expect(again.stop_reason).toBe('tool_use');
    expect(toolUses(again)[0]?.input).toEqual({ zone: 'Lima' });
  });
});

describe('Anthropic format: betas, system turns and count_tokens', () => {
  async function call(path: string, body: Json, betas?: string) {
    const res = await fetch(`${sim().baseUrl('anthropic', 'claude')}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-api-key': 'k',
        'anthropic-version': '2023-06-01',
        ...(betas === undefined ? {} : { 'anthropic-beta': betas }),
      },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Json };
  }
  const withSystemTurn = {
    model: 'claude-sonnet-4-5',
    max_tokens: 100,
    messages: [
      { role: 'user', content: 'Hello' },
      { role: 'system', content: [{ type: 'text', text: 'Be brief.' }], output_config: { effort: 'low' } },
    ],
  };

  it('takes a system turn and context_management only under their betas', async () => {
    const refused = await call('/v1/messages', withSystemTurn);
    expect(refused.status).toBe(400);
    expect(errorMessage(refused.body)).toContain('messages.1.role');
    const taken = await call('/v1/messages', withSystemTurn, 'per-turn-control-2026-07-01');
    expect(taken.status, JSON.stringify(taken.body)).toBe(200);
    // The system turn's text is part of the prompt.
    expect((taken.body.usage as { input_tokens: number }).input_tokens).toBe(
      promptTokens(['Hello', 'Be brief.']),
    );

    const managed = {
      ...withSystemTurn,
      messages: [withSystemTurn.messages[0]],
      context_management: { edits: [] },
    };
    expect((await call('/v1/messages', managed)).status).toBe(400);
    expect((await call('/v1/messages', managed, 'context-management-2025-06-27')).status).toBe(200);
  });

  it('counts tokens as a completion of the same request reports them', async () => {
    const request = {
      model: 'claude-sonnet-4-5',
      system: 'You are terse.',
      tools: TOOLS,
      messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
    };
    const counted = await call('/v1/messages/count_tokens', request);
    expect(counted.status, JSON.stringify(counted.body)).toBe(200);
    const done = await message({ ...request, max_tokens: 500 });
    expect(counted.body.input_tokens).toBe(done.usage.input_tokens);
    // count_tokens takes no output settings, as the API refuses them.
    const capped = await call('/v1/messages/count_tokens', { ...request, max_tokens: 10 });
    expect(capped.status).toBe(400);
    expect(errorMessage(capped.body)).toContain('max_tokens');
  });
});
