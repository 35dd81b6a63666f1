import { describe, expect, it } from 'vitest';
import { answer, chosenTools } from '../../src/simulator/answer.js';
import type { Conversation } from '../../src/simulator/conversation.js';
import type { WireFormat } from '../../src/simulator/index.js';
import {
  audioTokens,
  base64Bytes,
  emptyTally,
  fileTokens,
  isBase64,
  mediaNote,
  parseDataUrl,
} from '../../src/simulator/media.js';
import { composeReply, composeReplyNow, cutReply, fullReplyText } from '../../src/simulator/reply.js';
import { generate, lastWord } from '../../src/simulator/schema.js';
import { type Json, PNG_1X1, post, sharedSimulator, WEATHER_SCHEMA, weatherArgs } from './sim-helpers.js';

const sim = sharedSimulator();

function conversation(overrides: Partial<Conversation> = {}): Conversation {
  return {
    model: 'm',
    messageTexts: ['Hello'],
    lastUserText: 'Hello',
    cap: 4096,
    stops: [],
    extraPromptTokens: 0,
    tools: [],
    toolUse: { kind: 'auto' },
    parallelToolCalls: true,
    toolResults: null,
    media: emptyTally(),
    output: { kind: 'text' },
    n: 1,
    logprobs: null,
    reasoningTokens: 0,
    leadText: false,
    showThoughts: false,
    ...overrides,
  };
}

describe('the schema generator', () => {
  it('follows the rules: properties, enum, minimum, boolean, one item, first branch, null, no schema', () => {
    expect(generate(WEATHER_SCHEMA, 'Paris')).toEqual(weatherArgs('Paris'));
    expect(generate(undefined, 'x')).toEqual({});
    expect(generate({ type: 'integer', minimum: 2.5 }, 'x')).toBe(3);
    expect(generate({ type: 'number', minimum: 2.5 }, 'x')).toBe(2.5);
    expect(generate({ type: ['string', 'null'] }, 'w')).toBe('w');
    expect(generate({ oneOf: [{ type: 'boolean' }, { type: 'string' }] }, 'w')).toBe(true);
    expect(generate({ type: 'INTEGER', enum: ['7', '9'] }, 'w')).toBe(7);
    expect(
      generate({ type: 'ARRAY', items: { type: 'OBJECT', properties: { a: { type: 'NULL' } } } }, 'w'),
    ).toEqual([{ a: null }]);
    expect(generate({ const: 'fixed' }, 'w')).toBe('fixed');
  });

  it('takes the last word of the user text, punctuation stripped, or "sample"', () => {
    expect(lastWord('What about Paris?')).toBe('Paris');
    expect(lastWord('naïve café, über-cool!')).toBe('über-cool');
    expect(lastWord('  ?! ')).toBe('sample');
    expect(lastWord('')).toBe('sample');
  });
});

describe('media amounts and helpers', () => {
  it('counts audio per started 1,000 bytes and files per 4 bytes', () => {
    expect([audioTokens(0), audioTokens(1), audioTokens(1000), audioTokens(1001)]).toEqual([0, 32, 32, 64]);
    expect([fileTokens(0), fileTokens(1), fileTokens(4), fileTokens(5)]).toEqual([0, 1, 1, 2]);
  });

  it('notes what the prompt held, and nothing for text alone', () => {
    expect(mediaNote(emptyTally())).toBe('');
    expect(mediaNote({ images: 1, audio: 0, files: 0, tokens: 0 })).toBe(' (saw 1 image)');
    expect(mediaNote({ images: 2, audio: 2, files: 1, tokens: 0 })).toBe(
      ' (saw 2 images, 2 audio clips, 1 file)',
    );
  });

  it('reads base64 and data URLs', () => {
    expect(isBase64(PNG_1X1)).toBe(true);
    expect(base64Bytes(PNG_1X1)).toBe(Buffer.from(PNG_1X1, 'base64').length);
    expect(isBase64('abc')).toBe(false);
    expect(isBase64('ab-_', true)).toBe(true);
    expect(parseDataUrl(`data:image/PNG;base64,${PNG_1X1}`)).toEqual({
      mediaType: 'image/png',
      data: PNG_1X1,
    });
    expect(parseDataUrl('https://x/y.png')).toBeNull();
  });
});

describe('the simulated model', () => {
  it('answers a plain conversation exactly as composeReply does', () => {
    for (const [cap, stops] of [
      [4096, []],
      [5, []],
      [4096, ['quiet', 'harbor']],
    ] as const) {
      const a = answer('qwen', conversation({ cap, stops: [...stops] }));
      const reply = composeReply('qwen', 'Hello', cap, stops);
      expect(a.choices).toHaveLength(1);
      expect(a.choices[0]).toMatchObject({
        text: reply.text,
        finish: reply.finish,
        stopSequence: reply.stopSequence,
        completionTokens: reply.completionTokens,
      });
      expect(cutReply(fullReplyText('qwen', 'Hello'), cap, stops)).toEqual(
        composeReplyNow('qwen', 'Hello', cap, stops),
      );
    }
  });

  it('chooses tools by the rules', () => {
    const tools = [
      { name: 'alpha', schema: undefined },
      { name: 'beta', schema: undefined },
      { name: 'gamma', schema: undefined },
    ];
    const names = (overrides: Partial<Conversation>) =>
      chosenTools(conversation({ tools, ...overrides })).map((t) => t.name);
    expect(names({ lastUserText: 'nothing named' })).toEqual(['alpha']);
    expect(names({ lastUserText: 'GAMMA then Beta' })).toEqual(['beta', 'gamma']);
    expect(names({ lastUserText: 'GAMMA then Beta', parallelToolCalls: false })).toEqual(['beta']);
    expect(names({ lastUserText: 'alpha', toolUse: { kind: 'only', names: ['gamma'] } })).toEqual(['gamma']);
    expect(
      names({ lastUserText: 'alpha beta', toolUse: { kind: 'only', names: ['beta', 'gamma'] } }),
    ).toEqual(['beta']);
    expect(names({ toolUse: { kind: 'none' } })).toEqual([]);
    expect(names({ toolResults: [{ name: 'alpha', text: 'ok' }] })).toEqual([]);
  });

  it('breaks off before tool calls that do not fit in the cap', () => {
    const a = answer('x', conversation({ tools: [{ name: 'alpha', schema: WEATHER_SCHEMA }], cap: 3 }));
    expect(a.choices[0]).toMatchObject({ finish: 'length', toolCalls: [], text: '', completionTokens: 0 });
  });
});

describe('faults apply to every kind of request', () => {
  const toolRequests: Record<WireFormat, Json> = {
    'openai-compatible': {
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      tools: [{ type: 'function', function: { name: 'f' } }],
      reasoning_effort: 'low',
    },
    anthropic: {
      model: 'm',
      max_tokens: 2000,
      messages: [{ role: 'user', content: 'hi' }],
      tools: [{ name: 'f', input_schema: { type: 'object' } }],
      thinking: { type: 'enabled', budget_tokens: 1024 },
    },
    gemini: {
      contents: [{ role: 'user', parts: [{ text: 'hi' }] }],
      tools: [{ functionDeclarations: [{ name: 'f' }] }],
      generationConfig: { thinkingConfig: { thinkingBudget: 100 } },
    },
  };

  it.each(['openai-compatible', 'anthropic', 'gemini'] as const)(
    '%s: usage, no_usage, no_choices, status',
    async (format) => {
      sim().setFault('f', { kind: 'usage', promptTokens: 11, completionTokens: 7, times: 1 });
      const usage = await post(sim(), format, 'f', toolRequests[format]);
      expect(usage.status).toBe(200);
      expect(JSON.stringify(usage.body)).toMatch(/"(prompt_tokens|input_tokens|promptTokenCount)":11/);
      expect(JSON.stringify(usage.body)).toMatch(
        /"(completion_tokens|output_tokens|candidatesTokenCount)":7/,
      );
      sim().setFault('f', { kind: 'no_usage', times: 1 });
      const noUsage = await post(sim(), format, 'f', toolRequests[format]);
      expect(noUsage.body.usage ?? noUsage.body.usageMetadata).toBeUndefined();
      expect(JSON.stringify(noUsage.body)).toMatch(/tool_calls|tool_use|functionCall/);
      sim().setFault('f', { kind: 'no_choices', times: 1 });
      const none = await post(sim(), format, 'f', toolRequests[format]);
      expect(none.body.choices ?? none.body.content ?? none.body.candidates).toBeUndefined();
      sim().setFault('f', { kind: 'status', status: 503, times: 1 });
      expect((await post(sim(), format, 'f', toolRequests[format])).status).toBe(503);
    },
  );
});
