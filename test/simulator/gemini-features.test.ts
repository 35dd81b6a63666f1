import { Ajv2020 } from 'ajv/dist/2020.js';
import { countTokens, encode } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, it } from 'vitest';
import { THOUGHT_TOKENS } from '../../src/simulator/formats/gemini-request.js';
import { audioTokens, fileTokens, IMAGE_TOKENS } from '../../src/simulator/media.js';
import { composeReply, fullReplyText, promptTokens } from '../../src/simulator/reply.js';
import {
  base64Of,
  errorMessage,
  type Json,
  PNG_1X1,
  post,
  sharedSimulator,
  WEATHER_SCHEMA,
  weatherArgs,
} from './sim-helpers.js';

const sim = sharedSimulator();

type Part = { text: string; thought?: boolean } | { functionCall: { name: string; args: Json; id?: string } };
interface Candidate {
  content: { role: string; parts?: Part[] };
  finishReason: string;
  index: number;
  avgLogprobs?: number;
  logprobsResult?: {
    topCandidates?: Array<{ candidates: Array<{ token: string; tokenId: number; logProbability: number }> }>;
    chosenCandidates: Array<{ token: string; tokenId: number; logProbability: number }>;
  };
}
interface Response {
  candidates: Candidate[];
  usageMetadata: {
    promptTokenCount: number;
    candidatesTokenCount: number;
    totalTokenCount: number;
    thoughtsTokenCount?: number;
  };
}

const TOOLS = [
  {
    functionDeclarations: [
      { name: 'get_weather', description: 'Weather', parametersJsonSchema: WEATHER_SCHEMA },
      {
        name: 'get_time',
        parameters: { type: 'OBJECT', properties: { zone: { type: 'STRING' } }, required: ['zone'] },
      },
    ],
  },
];

function generate(body: Json) {
  return post(sim(), 'gemini', 'gemini', body);
}

async function response(body: Json): Promise<Response> {
  const res = await generate(body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as unknown as Response;
}

const user = (...parts: unknown[]) => ({ role: 'user', parts });
const model = (...parts: unknown[]) => ({ role: 'model', parts });
const text = (c: Candidate | undefined) => ((c?.content.parts ?? []).at(-1) as { text: string }).text;
const calls = (c: Candidate | undefined) =>
  (c?.content.parts ?? []).flatMap((p) => ('functionCall' in p ? [p.functionCall] : []));

describe('gemini: function calling', () => {
  it('calls the first function when none is named: functionCall parts without id, finish STOP', async () => {
    const r = await response({ contents: [user({ text: 'What is it like in Paris?' })], tools: TOOLS });
    const candidate = r.candidates[0];
    expect(candidate?.finishReason).toBe('STOP');
    expect(candidate?.content.parts).toEqual([
      { functionCall: { name: 'get_weather', args: weatherArgs('Paris') } },
    ]);
    expect(r.usageMetadata.candidatesTokenCount).toBe(
      countTokens('get_weather') + countTokens(JSON.stringify(weatherArgs('Paris'))),
    );
    expect(r.usageMetadata.promptTokenCount).toBe(
      promptTokens(['What is it like in Paris?']) + countTokens(JSON.stringify(TOOLS)),
    );
  });

  it('calls every function named (parallel); ANY with allowedFunctionNames forces one; NONE writes text', async () => {
    const both = await response({
      contents: [user({ text: 'get_time and get_weather for Oslo' })],
      tools: TOOLS,
    });
    expect(calls(both.candidates[0])).toEqual([
      { name: 'get_weather', args: weatherArgs('Oslo') },
      { name: 'get_time', args: { zone: 'Oslo' } },
    ]);
    const forced = await response({
      contents: [user({ text: 'about get_weather' })],
      tools: TOOLS,
      toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_time'] } },
    });
    expect(calls(forced.candidates[0]).map((c) => c.name)).toEqual(['get_time']);
    const none = await response({
      contents: [user({ text: 'get_time' })],
      tools: TOOLS,
      tool_config: { function_calling_config: { mode: 'NONE' } },
    });
    expect(text(none.candidates[0])).toBe(fullReplyText('gemini', 'get_time'));
  });

  it('after functionResponse parts, the reply quotes JSON.stringify(response) of each', async () => {
    const first = await response({ contents: [user({ text: 'get_time and get_weather' })], tools: TOOLS });
    const made = calls(first.candidates[0]);
    const contents = [
      user({ text: 'get_time and get_weather' }),
      { role: 'model', parts: made.map((c) => ({ functionCall: c })) },
      user(
        { functionResponse: { name: 'get_time', response: { output: '10:00' } } },
        { functionResponse: { name: 'get_weather', response: { output: 'fog' } } },
      ),
    ];
    const again = await response({
      contents: [...contents.slice(0, 2), user(...contents[2]!.parts, { text: 'and get_time in Lima?' })],
      tools: TOOLS,
    });
    // Text of the user's own next to the results: a user message, so the model calls again.
    expect(calls(again.candidates[0])).toEqual([{ name: 'get_time', args: { zone: 'Lima' } }]);
    const r = await response({ contents, tools: TOOLS });
    expect(text(r.candidates[0])).toBe(
      'Simulated reply from gemini: get_time returned {"output":"10:00"}; get_weather returned {"output":"fog"}',
    );
    let callTokens = 0;
    for (const c of made) callTokens += countTokens(c.name) + countTokens(JSON.stringify(c.args));
    expect(r.usageMetadata.promptTokenCount).toBe(
      promptTokens(['get_time and get_weather', '', '']) +
        countTokens(JSON.stringify(TOOLS)) +
        callTokens +
        countTokens('{"output":"10:00"}') +
        countTokens('{"output":"fog"}'),
    );
  });
});

describe('gemini: structured output', () => {
  it('responseJsonSchema: the text satisfies the schema', async () => {
    const schema = {
      type: 'object',
      properties: {
        name: { type: 'string' },
        count: { type: 'integer', minimum: 2 },
        tags: { type: 'array', items: { type: 'string' } },
      },
      required: ['name', 'count', 'tags'],
    };
    const r = await response({
      contents: [user({ text: 'List the ships.' })],
      generationConfig: { responseMimeType: 'application/json', responseJsonSchema: schema },
    });
    const value = JSON.parse(text(r.candidates[0])) as Json;
    expect(new Ajv2020().validate(schema, value)).toBe(true);
    expect(value).toEqual({ name: 'ships', count: 2, tags: ['ships'] });
  });

  it('responseSchema (OpenAPI, upper-case types) likewise; application/json alone gives {"reply": ...}', async () => {
    const r = await response({
      contents: [user({ text: 'Pick one' })],
      generationConfig: {
        responseMimeType: 'application/json',
        responseSchema: {
          type: 'OBJECT',
          properties: { color: { type: 'STRING', enum: ['red', 'blue'] }, n: { type: 'NUMBER' } },
          required: ['color'],
        },
      },
    });
    expect(JSON.parse(text(r.candidates[0]))).toEqual({ color: 'red', n: 1 });
    const json = await response({
      contents: [user({ text: 'Hello' })],
      generationConfig: { response_mime_type: 'application/json' },
    });
    expect(JSON.parse(text(json.candidates[0]))).toEqual({ reply: fullReplyText('gemini', 'Hello') });
  });
});

describe('gemini: media, candidates, logprobs, thinking', () => {
  it('inline images, audio and documents are acknowledged and counted', async () => {
    const r = await response({
      contents: [
        user(
          { inlineData: { mimeType: 'image/png', data: PNG_1X1 } },
          { inline_data: { mime_type: 'audio/mp3', data: base64Of(1000) } },
          { inlineData: { mimeType: 'application/pdf', data: base64Of(9) } },
          {
            fileData: {
              mimeType: 'image/jpeg',
              fileUri: 'https://generativelanguage.googleapis.com/v1beta/files/abc123',
            },
          },
          { text: 'Describe' },
        ),
      ],
    });
    expect(text(r.candidates[0])).toMatch(
      /^Simulated reply from gemini \(saw 2 images, 1 audio clip, 1 file\) to: Describe/,
    );
    expect(r.usageMetadata.promptTokenCount).toBe(
      promptTokens(['Describe']) + 2 * IMAGE_TOKENS.gemini + audioTokens(1000) + fileTokens(9),
    );
    expect(IMAGE_TOKENS.gemini).toBe(258);
  });

  it('candidateCount candidates; candidate i > 0 says so', async () => {
    const r = await response({
      contents: [user({ text: 'Hello' })],
      generationConfig: { candidateCount: 2 },
    });
    const base = fullReplyText('gemini', 'Hello');
    expect(r.candidates.map((c) => [c.index, text(c)])).toEqual([
      [0, base],
      [1, `${base} (choice 2)`],
    ]);
    expect(r.usageMetadata.candidatesTokenCount).toBe(countTokens(base) + countTokens(`${base} (choice 2)`));
  });

  it('responseLogprobs: chosenCandidates per token, topCandidates with logprobs, avgLogprobs', async () => {
    const r = await response({
      contents: [user({ text: 'Hello' })],
      generationConfig: { responseLogprobs: true, logprobs: 2, maxOutputTokens: 5 },
    });
    const c = r.candidates[0] as Candidate;
    const chosen = c.logprobsResult?.chosenCandidates ?? [];
    expect(chosen.map((t) => t.token).join('')).toBe(text(c));
    expect(chosen.map((t) => t.tokenId)).toEqual(encode(text(c)));
    expect(chosen.every((t) => t.logProbability < 0)).toBe(true);
    expect(c.logprobsResult?.topCandidates).toHaveLength(chosen.length);
    expect(c.logprobsResult?.topCandidates?.[0]?.candidates).toHaveLength(2);
    const avg = chosen.reduce((s, t) => s + t.logProbability, 0) / chosen.length;
    expect(c.avgLogprobs).toBeCloseTo(avg, 10);
  });

  it('thinking: thoughtsTokenCount 24 (outside candidatesTokenCount, inside the total); a thought part with includeThoughts', async () => {
    const r = await response({
      contents: [user({ text: 'Hello' })],
      generationConfig: { thinkingConfig: { thinkingBudget: 512, includeThoughts: true } },
    });
    const c = r.candidates[0] as Candidate;
    expect(c.content.parts?.[0]).toEqual({ text: 'Simulated thinking.', thought: true });
    expect(text(c)).toBe(fullReplyText('gemini', 'Hello'));
    const visible = countTokens(text(c));
    expect(r.usageMetadata).toEqual({
      promptTokenCount: promptTokens(['Hello']),
      candidatesTokenCount: visible,
      thoughtsTokenCount: THOUGHT_TOKENS,
      totalTokenCount: promptTokens(['Hello']) + visible + THOUGHT_TOKENS,
    });
    const off = await response({
      contents: [user({ text: 'Hello' })],
      generationConfig: { thinkingConfig: { thinkingBudget: 0 } },
    });
    expect(off.usageMetadata.thoughtsTokenCount).toBeUndefined();
    const spent = await response({
      contents: [user({ text: 'Hello' })],
      generationConfig: { maxOutputTokens: 20, thinkingConfig: { thinkingBudget: -1 } },
    });
    expect(spent.candidates[0]).toMatchObject({ content: { role: 'model' }, finishReason: 'MAX_TOKENS' });
    expect(spent.candidates[0]?.content.parts).toBeUndefined();
    expect(spent.usageMetadata).toMatchObject({
      candidatesTokenCount: 0,
      thoughtsTokenCount: 20,
      totalTokenCount: promptTokens(['Hello']) + 20,
    });
  });
});

describe('gemini: a plain text request is answered and counted as before', () => {
  it('same text, same usage numbers', async () => {
    const r = await response({
      systemInstruction: { parts: [{ text: 'Be kind.' }] },
      contents: [user({ text: 'Hi' }), model({ text: 'Hello!' }), user({ text: 'How are you?' })],
      generationConfig: { maxOutputTokens: 25, stopSequences: ['bells'] },
    });
    const reply = composeReply('gemini', 'How are you?', 25, ['bells']);
    expect(r.candidates).toEqual([
      {
        content: { parts: [{ text: reply.text }], role: 'model' },
        finishReason: reply.finish === 'length' ? 'MAX_TOKENS' : 'STOP',
        index: 0,
      },
    ]);
    const prompt = promptTokens(['Be kind.', 'Hi', 'Hello!', 'How are you?']);
    expect(r.usageMetadata).toEqual({
      promptTokenCount: prompt,
      candidatesTokenCount: reply.completionTokens,
      totalTokenCount: prompt + reply.completionTokens,
    });
  });
});

describe('gemini: validation as the Gemini API does it', () => {
  const call = { functionCall: { name: 'get_time', args: { zone: 'UTC' } } };
  const answer = (name: string) => ({ functionResponse: { name, response: { output: 'x' } } });

  it.each([
    [
      'a functionResponse with no function call before it',
      [user({ text: 'hi' }), user(answer('get_time'))],
      'function response turn comes immediately after a function call turn',
    ],
    [
      'a functionResponse naming another function',
      [user({ text: 'hi' }), model(call), user(answer('get_weather'))],
      'answers no function call of the preceding model turn',
    ],
    [
      'fewer responses than calls',
      [user({ text: 'hi' }), model(call, call), user(answer('get_time'))],
      'number of function response parts is equal to the number of function call parts',
    ],
    [
      'a first turn from the model',
      [model({ text: 'Hi' }), user({ text: 'hi' })],
      'multiturn requests alternate between user and model',
    ],
    [
      'a function call after a model turn',
      [user({ text: 'hi' }), model({ text: 'a' }), model(call), user(answer('get_time'))],
      'function call turn comes immediately after a user turn',
    ],
    [
      'an http fileData URI',
      [user({ fileData: { mimeType: 'image/png', fileUri: 'https://example.com/cat.png' } }, { text: 'x' })],
      'Invalid or unsupported file uri: https://example.com/cat.png',
    ],
    [
      'a part with two data fields',
      [user({ text: 'a', inlineData: { mimeType: 'image/png', data: PNG_1X1 } })],
      "Oneof field 'data' is already set",
    ],
    [
      'a part with no data field',
      [user({ thought: true })],
      "required oneof field 'data' must have one initialized field",
    ],
    [
      'a response that is not an object',
      [user({ text: 'hi' }), model(call), user({ functionResponse: { name: 'get_time', response: 'x' } })],
      'google.protobuf.Struct',
    ],
    ['bad base64', [user({ inlineData: { mimeType: 'image/png', data: '***' } })], 'Base64 decoding failed'],
    [
      'an unknown role',
      [{ role: 'assistant', parts: [{ text: 'x' }] }],
      'Please use a valid role: user, model.',
    ],
  ])('%s → 400', async (_name, contents, wording) => {
    const res = await generate({ contents, tools: TOOLS });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: { code: 400, status: 'INVALID_ARGUMENT' } });
    expect(errorMessage(res.body)).toContain(wording);
  });

  it.each([
    [
      'additionalProperties in parameters',
      {
        tools: [
          {
            functionDeclarations: [
              {
                name: 'f',
                parameters: {
                  type: 'object',
                  properties: { a: { type: 'string' } },
                  additionalProperties: false,
                },
              },
            ],
          },
        ],
      },
      'Unknown name "additionalProperties" at \'tools[0].function_declarations[0].parameters\'',
    ],
    [
      'an OBJECT without properties',
      { tools: [{ functionDeclarations: [{ name: 'f', parameters: { type: 'object', properties: {} } }] }] },
      'parameters.properties: should be non-empty for OBJECT type',
    ],
    [
      'a bad function name',
      { tools: [{ functionDeclarations: [{ name: '1fn' }] }] },
      'Invalid function name',
    ],
    [
      'an unknown generationConfig field',
      { generationConfig: { maxTokens: 5 } },
      'Unknown name "maxTokens" at \'generation_config\'',
    ],
    ['an unknown top-level field', { response_format: {} }, 'Unknown name "response_format"'],
    [
      'responseSchema with text/plain',
      { generationConfig: { responseSchema: { type: 'STRING' } } },
      'response_mime_type',
    ],
    [
      'an unsupported responseMimeType',
      { generationConfig: { responseMimeType: 'text/html' } },
      'allowed mimetypes',
    ],
    [
      'logprobs without responseLogprobs',
      { generationConfig: { logprobs: 3 } },
      'only valid when response_logprobs is true',
    ],
    ['candidateCount 9', { generationConfig: { candidateCount: 9 } }, 'candidate_count'],
    [
      'allowedFunctionNames naming an unknown function',
      {
        tools: TOOLS,
        toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['nope'] } },
      },
      'nope is not a declared function',
    ],
    [
      'mode ANY without functions',
      { toolConfig: { functionCallingConfig: { mode: 'ANY' } } },
      'without function_declarations',
    ],
  ])('%s → 400', async (_name, extra, wording) => {
    const res = await generate({ contents: [user({ text: 'hi' })], ...extra });
    expect(res.status).toBe(400);
    expect(errorMessage(res.body)).toContain(wording);
  });

  it('takes snake_case names, a content without a role (a user turn), Files API and gs:// URIs', async () => {
    const r = await response({
      system_instruction: { parts: [{ text: 'Be kind.' }] },
      contents: [
        {
          parts: [
            { file_data: { mime_type: 'application/pdf', file_uri: 'gs://bucket/doc.pdf' } },
            { text: 'Summarise' },
          ],
        },
      ],
      generation_config: { max_output_tokens: 200, thinking_config: { thinking_budget: 0 } },
    });
    expect(text(r.candidates[0])).toMatch(/^Simulated reply from gemini \(saw 1 file\) to: Summarise/);
  });
});
