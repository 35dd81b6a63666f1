/**
 * A streamed answer is the non-stream answer cut into pieces: the same text, tool calls, finish and usage,
 * in every wire format.
 */

import { describe, expect, it } from 'vitest';
import type { WireFormat } from '../../src/simulator/index.js';
import { type Json, post, sharedSimulator, TIME_SCHEMA, WEATHER_SCHEMA } from './sim-helpers.js';
import { assemble, bodyFor, countContent, FORMATS, postStream, summarise } from './stream-helpers.js';

const sim = sharedSimulator();

/** Tools named get_weather and get_time, in the format's own shape. */
function tools(format: WireFormat): Json {
  if (format === 'openai-compatible') {
    return {
      tools: [
        { type: 'function', function: { name: 'get_weather', parameters: WEATHER_SCHEMA } },
        { type: 'function', function: { name: 'get_time', parameters: TIME_SCHEMA } },
      ],
    };
  }
  if (format === 'anthropic') {
    return {
      tools: [
        { name: 'get_weather', input_schema: WEATHER_SCHEMA },
        { name: 'get_time', input_schema: TIME_SCHEMA },
      ],
    };
  }
  return {
    tools: [
      {
        functionDeclarations: [
          { name: 'get_weather', parametersJsonSchema: WEATHER_SCHEMA },
          { name: 'get_time', parametersJsonSchema: TIME_SCHEMA },
        ],
      },
    ],
  };
}

/** OpenAI reports usage in a stream only when asked. */
function withUsage(format: WireFormat, body: Json): Json {
  return format === 'openai-compatible' ? { ...body, stream_options: { include_usage: true } } : body;
}

describe.each(FORMATS)('%s stream = non-stream answer', (format) => {
  it('plain text: the pieces join to the same text, with the same finish and usage; 12 pieces by default', async () => {
    const body = bodyFor(format, 'Tell me about the harbor');
    const plain = await post(sim(), format, 'parity', body);
    expect(plain.status).toBe(200);
    const streamed = await postStream(sim(), format, 'parity', withUsage(format, body));
    expect(streamed.status).toBe(200);
    expect(streamed.error).toBeNull();
    expect(streamed.contentType).toContain('text/event-stream');
    expect(assemble(format, streamed.text)).toEqual(summarise(format, plain.body));
    expect(countContent(format, streamed.text)).toBe(12);
  });

  it('tool calls assemble to the same calls, arguments and usage', async () => {
    const body = bodyFor(format, 'What are get_weather and get_time in Paris?', tools(format));
    const plain = await post(sim(), format, 'parity', body);
    expect(plain.status, JSON.stringify(plain.body)).toBe(200);
    const expected = summarise(format, plain.body);
    expect(expected.calls.map((c) => c.name)).toEqual(['get_weather', 'get_time']);
    const streamed = await postStream(sim(), format, 'parity', withUsage(format, body));
    expect(assemble(format, streamed.text)).toEqual(expected);
  });

  it('a cap cuts the streamed text where it cuts the non-stream text', async () => {
    const cap =
      format === 'openai-compatible'
        ? { max_tokens: 7 }
        : format === 'anthropic'
          ? { max_tokens: 7 }
          : { generationConfig: { maxOutputTokens: 7 } };
    const body = bodyFor(format, 'Short please', cap);
    const plain = await post(sim(), format, 'parity', body);
    const streamed = await postStream(sim(), format, 'parity', withUsage(format, body));
    const expected = summarise(format, plain.body);
    expect(['length', 'max_tokens', 'MAX_TOKENS']).toContain(expected.finish);
    expect(assemble(format, streamed.text)).toEqual(expected);
  });

  it('records the request as streamed, and the stream as complete', async () => {
    await post(sim(), format, 'rec', bodyFor(format));
    await postStream(sim(), format, 'rec', bodyFor(format));
    expect(
      sim()
        .requests('rec')
        .map((r) => r.stream),
    ).toEqual([false, true]);
    const [stream] = sim().streams('rec');
    expect(stream).toMatchObject({
      outcome: 'complete',
      piecesPlanned: 12,
      piecesSent: 12,
      closedEarlyAt: null,
    });
    expect(stream?.endedAt).toBeGreaterThanOrEqual(stream?.startedAt ?? Number.NaN);
  });
});

describe('pieces', () => {
  it.each(FORMATS)('%s: chunks 50 gives 50 pieces of the usual reply; chunks 1 gives one', async (format) => {
    sim().setStream({ chunks: 50 });
    const fifty = await postStream(sim(), format, 'p', bodyFor(format, 'Hi'));
    expect(countContent(format, fifty.text)).toBe(50);
    sim().setStream({ chunks: 1 });
    const one = await postStream(sim(), format, 'p', bodyFor(format, 'Hi'));
    expect(countContent(format, one.text)).toBe(1);
    expect(assemble(format, one.text).text).toBe(assemble(format, fifty.text).text);
  });

  it('a longer reply (setReplyWords) streams longer, and is the non-stream reply too', async () => {
    sim().setReplyWords(400);
    sim().setStream({ chunks: 500 });
    const body = bodyFor('openai-compatible', 'Long one');
    const plain = await post(sim(), 'openai-compatible', 'long', body);
    const streamed = await postStream(sim(), 'openai-compatible', 'long', body);
    const text = assemble('openai-compatible', streamed.text).text;
    expect(text).toBe(summarise('openai-compatible', plain.body).text);
    expect(text.split(' ').length).toBeGreaterThan(400);
    expect(countContent('openai-compatible', streamed.text)).toBe(500);
  });
});
