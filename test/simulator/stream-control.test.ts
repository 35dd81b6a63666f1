/** Setting the stream's size and pace, the reply length, and reading the stream records: in process and over HTTP. */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { DEFAULT_STREAM_CHUNKS, startSimulator } from '../../src/simulator/index.js';
import { type Json, sharedSimulator } from './sim-helpers.js';
import { assemble, bodyFor, countContent, postStream } from './stream-helpers.js';

const sim = sharedSimulator();

async function control(
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${sim().url}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Json };
}

describe('control API for streams', () => {
  it('POST /__sim/stream sets pieces and pace; GET reads them; reset restores the start values', async () => {
    expect(await control('GET', '/__sim/stream')).toEqual({
      status: 200,
      body: { chunks: DEFAULT_STREAM_CHUNKS, chunksPerSecond: 0 },
    });
    expect(await control('POST', '/__sim/stream', { chunks: 5 })).toEqual({
      status: 200,
      body: { chunks: 5, chunksPerSecond: 0 },
    });
    expect((await control('POST', '/__sim/stream', { chunksPerSecond: 12.5 })).body).toEqual({
      chunks: 5,
      chunksPerSecond: 12.5,
    });
    sim().setStream({ chunksPerSecond: 0 });
    const res = await postStream(sim(), 'anthropic', 'c', bodyFor('anthropic'));
    expect(countContent('anthropic', res.text)).toBe(5);
    expect((await control('POST', '/__sim/reset')).status).toBe(200);
    expect(sim().streamSettings()).toEqual({ chunks: DEFAULT_STREAM_CHUNKS, chunksPerSecond: 0 });
  });

  it('POST /__sim/reply sets the filler words of the usual reply', async () => {
    expect((await control('POST', '/__sim/reply', { words: 120 })).status).toBe(200);
    const res = await postStream(sim(), 'gemini', 'w', bodyFor('gemini', 'Hi'));
    const text = assemble('gemini', res.text).text;
    expect(text.split('…')[1]?.trim().split(' ')).toHaveLength(120);
  });

  it('GET /__sim/streams lists the streams of a slug with how they ended', async () => {
    await control('POST', '/__sim/fault', { slug: 'rec', fault: { kind: 'cut', afterChunks: 2, times: 1 } });
    await postStream(sim(), 'openai-compatible', 'rec', bodyFor('openai-compatible'));
    await postStream(sim(), 'openai-compatible', 'rec', bodyFor('openai-compatible'));
    const { body } = await control('GET', '/__sim/streams?slug=rec');
    const streams = body.streams as Json[];
    expect(streams.map((s) => [s.outcome, s.piecesSent, s.closedEarlyAt])).toEqual([
      ['cut', 2, null],
      ['complete', 12, null],
    ]);
    expect(streams[0]?.path).toBe('/openai/rec/v1/chat/completions');
    expect((await control('GET', '/__sim/requests?slug=rec')).body.requests).toMatchObject([
      { stream: true },
      { stream: true },
    ]);
  });

  it('accepts the stream fault shapes and refuses bad ones', async () => {
    const ok = [
      { kind: 'cut', afterChunks: 0 },
      { kind: 'stall', afterChunks: 3, times: 2 },
      { kind: 'stream_error', afterChunks: 1, status: 500, message: 'boom' },
    ];
    for (const fault of ok)
      expect((await control('POST', '/__sim/fault', { slug: 'f', fault })).status).toBe(200);
    const bad = [
      { kind: 'cut' },
      { kind: 'stall', afterChunks: -1 },
      { kind: 'stream_error', afterChunks: 1, status: 200 },
      { kind: 'stream_error', afterChunks: 1, message: 3 },
    ];
    for (const fault of bad)
      expect((await control('POST', '/__sim/fault', { slug: 'f', fault })).status).toBe(400);
  });

  it('refuses bad settings', async () => {
    for (const body of [{}, { chunks: 0 }, { chunks: 1.5 }, { chunksPerSecond: -1 }, { chunks: 'many' }]) {
      expect((await control('POST', '/__sim/stream', body)).status).toBe(400);
    }
    expect((await control('POST', '/__sim/reply', { words: 0 })).status).toBe(400);
    expect((await control('GET', '/__sim/streams')).status).toBe(400);
    expect(() => sim().setStream({ chunks: 0 })).toThrow(TypeError);
    expect(() => sim().setReplyWords(-3)).toThrow(TypeError);
  });
});

describe('start values', () => {
  it('startSimulator takes streamChunks, streamChunksPerSecond and replyWords, and reset returns to them', async () => {
    const own = await startSimulator({ streamChunks: 4, streamChunksPerSecond: 100, replyWords: 10 });
    try {
      own.setStream({ chunks: 9, chunksPerSecond: 0 });
      own.reset();
      expect(own.streamSettings()).toEqual({ chunks: 4, chunksPerSecond: 100 });
      const res = await postStream(own, 'openai-compatible', 's', bodyFor('openai-compatible', 'Hi'));
      expect(countContent('openai-compatible', res.text)).toBe(4);
      expect(assemble('openai-compatible', res.text).text.split('…')[1]?.trim().split(' ')).toHaveLength(10);
    } finally {
      await own.close();
    }
    await expect(startSimulator({ streamChunks: 0 })).rejects.toThrow(TypeError);
  });

  it('the standalone entry takes --stream-chunks, --stream-chunks-per-second and --reply-words', async () => {
    const args = ['--stream-chunks', '50', '--stream-chunks-per-second', '20', '--reply-words', '60'];
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/simulator/main.ts', ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const line = await new Promise<string>((resolve, reject) => {
        let buffered = '';
        child.stdout.on('data', (chunk: Buffer) => {
          buffered += chunk.toString('utf8');
          const newline = buffered.indexOf('\n');
          if (newline !== -1) resolve(buffered.slice(0, newline));
        });
        child.once('exit', (code) => reject(new Error(`exited early with ${code}`)));
      });
      const { url } = JSON.parse(line) as { url: string };
      const settings = await fetch(`${url}/__sim/stream`);
      expect(await settings.json()).toEqual({ chunks: 50, chunksPerSecond: 20 });
    } finally {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
  });
});
