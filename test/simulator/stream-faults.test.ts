/** Faults on streams, the pace, and what the simulator records of streams that end early. */
import { describe, expect, it } from 'vitest';
import { startSimulator, type WireFormat } from '../../src/simulator/index.js';
import { type Json, post, sharedSimulator } from './sim-helpers.js';
import {
  assemble,
  bodyFor,
  countContent,
  eventually,
  FORMATS,
  jsonEvents,
  openStream,
  parseSse,
  postStream,
  streamUrl,
} from './stream-helpers.js';

const sim = sharedSimulator();

/** Whether the stream got its format's ending. */
function ended(format: WireFormat, text: string): boolean {
  if (format === 'openai-compatible') return text.includes('data: [DONE]');
  if (format === 'anthropic') return text.includes('event: message_stop');
  return text.includes('"finishReason"');
}

describe('cut', () => {
  it.each(FORMATS)('%s: 3 content events, then the connection drops without the ending', async (format) => {
    sim().setFault('cut', { kind: 'cut', afterChunks: 3 });
    const res = await postStream(sim(), format, 'cut', bodyFor(format));
    expect(res.status).toBe(200);
    expect(res.error).not.toBeNull();
    expect(countContent(format, res.text)).toBe(3);
    expect(ended(format, res.text)).toBe(false);
    expect(sim().streams('cut')).toMatchObject([
      { outcome: 'cut', piecesPlanned: 12, piecesSent: 3, closedEarlyAt: null },
    ]);
  });

  it('afterChunks beyond the content: every piece, then the drop before the ending events', async () => {
    sim().setFault('cut', { kind: 'cut', afterChunks: 99 });
    const res = await postStream(sim(), 'anthropic', 'cut', bodyFor('anthropic'));
    expect(res.error).not.toBeNull();
    expect(countContent('anthropic', res.text)).toBe(12);
    expect(res.text).not.toContain('message_delta');
  });

  it('afterChunks 0: the stream starts (role chunk) and drops', async () => {
    sim().setFault('cut', { kind: 'cut', afterChunks: 0 });
    const res = await postStream(sim(), 'openai-compatible', 'cut', bodyFor('openai-compatible'));
    expect(res.error).not.toBeNull();
    expect(jsonEvents(res.text)).toHaveLength(1);
    expect(res.text).toContain('"role":"assistant"');
  });
});

describe('stall and the client leaving', () => {
  it.each(FORMATS)(
    '%s stall: 2 pieces, then silence until the client leaves; the close is recorded at once',
    async (format) => {
      sim().setFault('st', { kind: 'stall', afterChunks: 2 });
      const live = await openStream(sim(), format, 'st', bodyFor(format));
      await live.waitFor((text) => countContent(format, text) === 2);
      await eventually(() => (sim().streams('st')[0]?.outcome === 'stalled' ? true : undefined));
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(countContent(format, live.text())).toBe(2);
      const left = live.abort();
      const record = await eventually(() => {
        const s = sim().streams('st')[0];
        return s?.outcome === 'client_closed' ? s : undefined;
      });
      expect(record.closedEarlyAt).not.toBeNull();
      expect((record.closedEarlyAt as number) - left).toBeLessThan(1000);
      expect(record).toMatchObject({ piecesSent: 2, piecesPlanned: 12 });
    },
  );

  it('a client leaving a paced stream: the simulator stops writing and records how far it got', async () => {
    sim().setStream({ chunks: 50, chunksPerSecond: 20 });
    const live = await openStream(sim(), 'openai-compatible', 'away', bodyFor('openai-compatible'));
    await live.waitFor((text) => countContent('openai-compatible', text) >= 3);
    const left = live.abort();
    const record = await eventually(() => {
      const s = sim().streams('away')[0];
      return s?.outcome === 'client_closed' ? s : undefined;
    });
    expect((record.closedEarlyAt as number) - left).toBeLessThan(1000);
    expect(record.piecesSent).toBeGreaterThanOrEqual(3);
    expect(record.piecesSent).toBeLessThan(10);
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(sim().streams('away')[0]?.piecesSent).toBe(record.piecesSent);
  });

  it('close() ends a stalled stream at once', async () => {
    const own = await startSimulator();
    own.setFault('x', { kind: 'stall', afterChunks: 1 });
    const live = await openStream(own, 'anthropic', 'x', bodyFor('anthropic'));
    await live.waitFor((text) => countContent('anthropic', text) === 1);
    const started = Date.now();
    await own.close();
    expect(Date.now() - started).toBeLessThan(1000);
    expect(await live.ended).not.toBeNull();
    expect(own.streams('x')[0]?.outcome).toBe('shutdown');
  });
});

describe('stream_error', () => {
  it('openai: a data: {"error"} event after the pieces, no [DONE]', async () => {
    sim().setFault('e', { kind: 'stream_error', afterChunks: 2, status: 429, message: 'Slow down' });
    const res = await postStream(sim(), 'openai-compatible', 'e', bodyFor('openai-compatible'));
    expect(res.error).toBeNull();
    const events = parseSse(res.text);
    expect(events.at(-1)?.data).not.toBe('[DONE]');
    expect(JSON.parse(events.at(-1)?.data ?? '')).toEqual({
      error: { message: 'Slow down', type: 'rate_limit_error', code: 'rate_limit_exceeded', param: null },
    });
    expect(countContent('openai-compatible', res.text)).toBe(2);
    expect(sim().streams('e')[0]).toMatchObject({ outcome: 'error_event', piecesSent: 2 });
  });

  it('anthropic: event: error, overloaded by default, no message_stop', async () => {
    sim().setFault('e', { kind: 'stream_error', afterChunks: 4 });
    const res = await postStream(sim(), 'anthropic', 'e', bodyFor('anthropic'));
    const last = parseSse(res.text).at(-1);
    expect(last?.event).toBe('error');
    expect(JSON.parse(last?.data ?? '')).toEqual({
      type: 'error',
      error: { type: 'overloaded_error', message: 'Overloaded' },
    });
    expect(countContent('anthropic', res.text)).toBe(4);
    expect(res.text).not.toContain('message_stop');
  });

  it('gemini: the bare error JSON after the events (alt=sse), the error as the last element (array)', async () => {
    sim().setFault('e', { kind: 'stream_error', afterChunks: 2, times: 2 });
    const sse = await postStream(sim(), 'gemini', 'e', bodyFor('gemini'));
    const tail = sse.text.slice(sse.text.lastIndexOf('\r\n\r\n') + 4);
    expect(JSON.parse(tail)).toEqual({
      error: {
        code: 503,
        message: 'The model is overloaded. Please try again later.',
        status: 'UNAVAILABLE',
      },
    });
    expect(countContent('gemini', sse.text.slice(0, -tail.length))).toBe(2);
    const array = await postStream(sim(), 'gemini', 'e', bodyFor('gemini'), {
      url: streamUrl(sim(), 'gemini', 'e', false),
    });
    const elements = JSON.parse(array.text) as Json[];
    expect(elements).toHaveLength(3);
    expect(elements[2]).toMatchObject({ error: { code: 503, status: 'UNAVAILABLE' } });
  });
});

describe('the other faults on a stream request', () => {
  it.each(FORMATS)('%s: a status fault answers the JSON error before any stream', async (format) => {
    sim().setFault('s', { kind: 'status', status: 429, retryAfter: 3 });
    const res = await postStream(sim(), format, 's', bodyFor(format));
    expect(res.status).toBe(429);
    expect(res.contentType).toContain('application/json');
    expect(JSON.parse(res.text)).toHaveProperty('error');
    expect(sim().streams('s')).toEqual([]);
    expect(sim().requests('s')[0]?.stream).toBe(true);
  });

  it('reset: stream headers, part of an event, then the drop', async () => {
    sim().setFault('r', { kind: 'reset' });
    const res = await postStream(sim(), 'openai-compatible', 'r', bodyFor('openai-compatible'));
    expect(res.status).toBe(200);
    expect(res.contentType).toContain('text/event-stream');
    expect(res.error).not.toBeNull();
    expect(parseSse(res.text).length).toBe(1);
  });

  it('hang: no answer at all', async () => {
    sim().setFault('h', { kind: 'hang' });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 150);
    await expect(
      fetch(streamUrl(sim(), 'anthropic', 'h'), {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({ ...bodyFor('anthropic'), stream: true }),
        signal: controller.signal,
      }),
    ).rejects.toThrow();
  });

  it.each(FORMATS)('%s: usage reports the fault numbers; no_usage reports none', async (format) => {
    const body =
      format === 'openai-compatible'
        ? bodyFor(format, 'Hi', { stream_options: { include_usage: true } })
        : bodyFor(format);
    sim().setFault('u', { kind: 'usage', promptTokens: 1234, completionTokens: 7 });
    const given = assemble(format, (await postStream(sim(), format, 'u', body)).text);
    expect([given.prompt, given.completion]).toEqual([1234, 7]);
    sim().setFault('u', { kind: 'no_usage' });
    const none = await postStream(sim(), format, 'u', body);
    expect(none.text).not.toMatch(/"usage":\{|"usageMetadata"|"input_tokens"/);
    expect(assemble(format, none.text).text).toContain('Simulated reply from u');
  });

  it.each(FORMATS)('%s: no_choices streams no choice, block or candidate', async (format) => {
    sim().setFault('n', { kind: 'no_choices' });
    const res = await postStream(sim(), format, 'n', bodyFor(format));
    expect(res.status).toBe(200);
    expect(countContent(format, res.text)).toBe(0);
    expect(res.text).not.toContain('Simulated reply');
    expect(ended(format, res.text) || format === 'gemini').toBe(true);
  });

  it('stream faults pass a request that does not stream by, without counting it', async () => {
    sim().setFault('p', { kind: 'cut', afterChunks: 1, times: 1 });
    const plain = await post(sim(), 'openai-compatible', 'p', bodyFor('openai-compatible'));
    expect(plain.status).toBe(200);
    expect(
      (await postStream(sim(), 'openai-compatible', 'p', bodyFor('openai-compatible'))).error,
    ).not.toBeNull();
    expect(
      (await postStream(sim(), 'openai-compatible', 'p', bodyFor('openai-compatible'))).error,
    ).toBeNull();
  });

  it('latency and slow delay the first event', async () => {
    sim().setLatency(120);
    sim().setFault('l', { kind: 'slow', delayMs: 60 });
    const started = Date.now();
    const res = await postStream(sim(), 'gemini', 'l', bodyFor('gemini'));
    expect(res.status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(170);
    const stream = sim().streams('l')[0];
    expect((stream?.startedAt ?? 0) - started).toBeGreaterThanOrEqual(170);
  });
});

describe('pace', () => {
  it.each(FORMATS)('%s: 10 pieces at 50 per second take about 180 ms, evenly', async (format) => {
    sim().setStream({ chunks: 10, chunksPerSecond: 50 });
    const live = await openStream(sim(), format, 'pace', bodyFor(format));
    const arrivals: number[] = [];
    let seen = 0;
    await live.waitFor((text) => {
      const count = countContent(format, text);
      while (seen < count) {
        arrivals.push(Date.now());
        seen++;
      }
      return count === 10;
    });
    await live.ended;
    const spread = (arrivals.at(-1) as number) - (arrivals[0] as number);
    expect(spread).toBeGreaterThanOrEqual(150);
    expect(spread).toBeLessThan(1000);
    const stream = sim().streams('pace')[0];
    expect(stream?.outcome).toBe('complete');
    expect((stream?.endedAt as number) - (stream?.startedAt as number)).toBeGreaterThanOrEqual(175);
  });
});
