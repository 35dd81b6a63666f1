/** How strings are cut into pieces, how log probabilities follow them, and how the writer paces itself. */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { tokenLogprobs } from '../../src/simulator/logprobs.js';
import { pieceLogprobs, slicePieces } from '../../src/simulator/stream-pieces.js';
import { pumpStream, type StreamRun } from '../../src/simulator/stream-writer.js';
import type { SimStream } from '../../src/simulator/types.js';

describe('slicePieces', () => {
  it('cuts into about equal pieces that join to the text', () => {
    const text = 'The quiet harbor keeps its lanterns burning.';
    const pieces = slicePieces(text, 8);
    expect(pieces).toHaveLength(8);
    expect(pieces.join('')).toBe(text);
    const lengths = pieces.map((p) => p.length);
    expect(Math.max(...lengths) - Math.min(...lengths)).toBeLessThanOrEqual(1);
  });

  it('never more pieces than characters, none for nothing, and a character stays whole', () => {
    expect(slicePieces('abc', 10)).toEqual(['a', 'b', 'c']);
    expect(slicePieces('', 5)).toEqual([]);
    expect(slicePieces('🎉🎉x', 3)).toEqual(['🎉', '🎉', 'x']);
    expect(slicePieces('abc', 1)).toEqual(['abc']);
  });
});

describe('pieceLogprobs', () => {
  it.each(['Simulated reply from x to: Hi … the quiet harbor.', 'naïve 日本語テキスト 🎉🎉 done'])(
    'shares out exactly the tokens of the whole text, in order: %s',
    (text) => {
      for (const count of [1, 3, 7, 40]) {
        const pieces = slicePieces(text, count);
        const shares = pieceLogprobs(text, pieces, 2);
        expect(shares).toHaveLength(pieces.length);
        expect(shares.flat()).toEqual(tokenLogprobs(text, 2));
      }
    },
  );
});

/** A sink that takes `highWaterMark` bytes and then holds every write until `release()`. */
function slowSink() {
  const held: Array<() => void> = [];
  let bytes = 0;
  const sink = new Writable({
    highWaterMark: 64,
    write(chunk: Buffer, _encoding, callback) {
      bytes += chunk.length;
      held.push(() => callback());
    },
  });
  return {
    sink,
    bytes: () => bytes,
    release: () => {
      for (const done of held.splice(0)) done();
    },
  };
}

function run(steps: number, overrides: Partial<StreamRun> = {}): StreamRun {
  const record: SimStream = {
    path: '/p',
    startedAt: Date.now(),
    piecesPlanned: steps,
    piecesSent: 0,
    outcome: 'open',
    closedEarlyAt: null,
    endedAt: null,
  };
  return {
    plan: {
      head: ['head\n'],
      steps: Array.from({ length: steps }, (_, k) => [`piece ${String(k).padStart(40, '.')}\n`]),
      tail: ['tail\n'],
    },
    perSecond: 0,
    fault: null,
    errorFrame: () => 'error\n',
    record,
    closing: () => false,
    ...overrides,
  };
}

describe('pumpStream', () => {
  it('writes the next piece only when the sink has taken the last ones', async () => {
    const { sink, bytes, release } = slowSink();
    const job = run(1000);
    const done = pumpStream(sink, job);
    await new Promise((resolve) => setTimeout(resolve, 30));
    // Held back after the sink's buffer filled, not 1000 pieces queued in memory.
    expect(job.record.piecesSent).toBeLessThan(5);
    const pending = job.record.piecesSent;
    for (let i = 0; i < 10_000 && job.record.outcome === 'open'; i++) {
      release();
      await new Promise((resolve) => setImmediate(resolve));
      expect(sink.writableLength).toBeLessThan(200);
    }
    await done;
    release();
    expect(pending).toBeLessThan(job.record.piecesSent);
    expect(job.record).toMatchObject({ outcome: 'complete', piecesSent: 1000 });
    expect(bytes()).toBeGreaterThan(1000 * 40);
  });

  it('a sink closed during a pause: stops at once and records the close', async () => {
    const sink = new Writable({ write: (_chunk, _encoding, callback) => callback() });
    const job = run(100, { perSecond: 5 });
    const done = pumpStream(sink, job);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const closedAt = Date.now();
    sink.destroy();
    await done;
    expect(job.record.outcome).toBe('client_closed');
    expect((job.record.closedEarlyAt as number) - closedAt).toBeLessThan(100);
    expect(job.record.piecesSent).toBe(1);
  });

  it('during close(), a close is the simulator’s own', async () => {
    const sink = new Writable({ write: (_chunk, _encoding, callback) => callback() });
    const job = run(10, { fault: { kind: 'stall', afterChunks: 2 }, closing: () => true });
    await pumpStream(sink, job);
    expect(job.record.outcome).toBe('stalled');
    sink.destroy();
    await new Promise((resolve) => setImmediate(resolve));
    expect(job.record).toMatchObject({ outcome: 'shutdown', closedEarlyAt: null, piecesSent: 2 });
  });
});
