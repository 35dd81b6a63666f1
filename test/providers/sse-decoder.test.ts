import { describe, expect, it } from 'vitest';
import { SseDecoder, type SseEvent, SseEventTooLargeError } from '../../src/providers/sse-decoder.js';
import { fixture } from './provider-test-helpers.js';

const MiB = 1024 * 1024;

/** Decodes `pieces` fed one after the other. */
function decode(pieces: readonly (Uint8Array | string)[], maxEventBytes = MiB): SseEvent[] {
  const decoder = new SseDecoder({ maxEventBytes });
  const events = pieces.flatMap((piece) => decoder.push(piece));
  decoder.end();
  return events;
}

function bytes(text: string): Buffer {
  return Buffer.from(text, 'utf8');
}

/** Every byte on its own. */
function byteByByte(data: Buffer): Buffer[] {
  return Array.from(data, (_, i) => data.subarray(i, i + 1));
}

describe('SSE decoder', () => {
  const transcript = bytes(fixture('anthropic-stream-tool-use.txt'));
  const whole = decode([transcript]);

  it('reads a recorded transcript: names, data, in order', () => {
    expect(whole.map((event) => event.name)).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    for (const event of whole) expect(JSON.parse(event.data)).toMatchObject({ type: event.name });
  });

  it('gives the same events whatever the chunking: byte by byte, and cut in two at every point', () => {
    expect(decode(byteByByte(transcript))).toEqual(whole);
    for (let cut = 0; cut <= transcript.length; cut += 1) {
      expect(decode([transcript.subarray(0, cut), transcript.subarray(cut)])).toEqual(whole);
    }
  });

  it('takes CRLF and CR line ends as LF, a CRLF cut between two chunks included', () => {
    const text = fixture('anthropic-stream-tool-use.txt');
    const crlf = bytes(text.replace(/\n/g, '\r\n'));
    const cr = bytes(text.replace(/\n/g, '\r'));
    expect(decode([crlf])).toEqual(whole);
    expect(decode([cr])).toEqual(whole);
    expect(decode(byteByByte(crlf))).toEqual(whole);
    expect(decode(byteByByte(cr))).toEqual(whole);
    // A CR at the end of one chunk and its LF at the start of the next end one line, not two.
    expect(decode(['data: a\r', '\ndata: b\r', '\n\r', '\n'])).toEqual([{ name: undefined, data: 'a\nb' }]);
    // Mixed line ends in one stream.
    expect(decode(['data: a\r\n\ndata: b\r\rdata: c\n\r\n'])).toEqual([
      { name: undefined, data: 'a' },
      { name: undefined, data: 'b' },
      { name: undefined, data: 'c' },
    ]);
  });

  it('reads a CRLF transcript as Gemini sends one, byte by byte', () => {
    const gemini = bytes(fixture('gemini-stream-text.txt').replace(/\r?\n/g, '\r\n'));
    const events = decode(byteByByte(gemini));
    expect(events).toHaveLength(3);
    expect(events).toEqual(decode([gemini]));
    expect(JSON.parse(events[2]?.data ?? '')).toMatchObject({ modelVersion: 'gemini-2.5-flash' });
  });

  it('joins data lines with LF and drops only one space after the colon', () => {
    expect(decode(['data: first\ndata:second\ndata:  third\ndata\ndata: \n\n'])).toEqual([
      { name: undefined, data: 'first\nsecond\n third\n\n' },
    ]);
    expect(decode(['data: {"a":\ndata: 1}\n\n'])).toEqual([{ name: undefined, data: '{"a":\n1}' }]);
  });

  it('ignores comments, id, retry and unknown fields; an event without data is not handed out', () => {
    const text =
      ': this is a comment\n' +
      ':\n' +
      'id: 42\n' +
      'retry: 1000\n' +
      'custom: field\n' +
      'event: ping\n' +
      '\n' +
      'event: message_stop\n' +
      ': keep-alive inside an event\n' +
      'data: {"type":"message_stop"}\n' +
      '\n' +
      'data: after\n' +
      '\n';
    expect(decode([text])).toEqual([
      { name: 'message_stop', data: '{"type":"message_stop"}' },
      // The name does not carry over to the next event; the event without data named none.
      { name: undefined, data: 'after' },
    ]);
  });

  it('takes an empty data field as an event with empty data, and an empty name as none', () => {
    expect(decode(['data:\n\nevent:\ndata: x\n\n'])).toEqual([
      { name: undefined, data: '' },
      { name: undefined, data: 'x' },
    ]);
  });

  it('keeps a multi-byte UTF-8 character whole whichever byte the chunk ends on', () => {
    const text = 'data: {"text":"héllo wörld ✓ 𝄞 日本"}\n\n';
    const encoded = bytes(text);
    const expected = [{ name: undefined, data: '{"text":"héllo wörld ✓ 𝄞 日本"}' }];
    expect(decode(byteByByte(encoded))).toEqual(expected);
    for (let cut = 0; cut <= encoded.length; cut += 1) {
      expect(decode([encoded.subarray(0, cut), encoded.subarray(cut)])).toEqual(expected);
    }
  });

  it('skips one leading byte-order mark, in bytes or in text', () => {
    const withBom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes('data: x\n\n')]);
    expect(decode([withBom])).toEqual([{ name: undefined, data: 'x' }]);
    expect(decode(byteByByte(withBom))).toEqual([{ name: undefined, data: 'x' }]);
    expect(decode(['\ufeffdata: x\n\n'])).toEqual([{ name: undefined, data: 'x' }]);
    // Only at the very start: the field name is then "\ufeffdata", which is no field.
    expect(decode(['data: a\n\n\ufeffdata: b\n\n'])).toEqual([{ name: undefined, data: 'a' }]);
  });

  it('drops an event left without its closing blank line when the body ends', () => {
    const decoder = new SseDecoder({ maxEventBytes: MiB });
    expect(decoder.push('data: complete\n\ndata: cut short\n')).toEqual([
      { name: undefined, data: 'complete' },
    ]);
    decoder.end();
    expect(decoder.push('data: next\n\n')).toEqual([{ name: undefined, data: 'next' }]);
  });

  it('hands out an event exactly at the limit and refuses one byte more', () => {
    const atLimit = `data: ${'x'.repeat(100)}\n\n`;
    expect(decode([atLimit], 100)).toEqual([{ name: undefined, data: 'x'.repeat(100) }]);
    expect(() => decode([`data: ${'x'.repeat(101)}\n\n`], 100)).toThrow(SseEventTooLargeError);
    // Multi-byte characters count as their UTF-8 bytes: 34 × 3 bytes is past 100.
    expect(() => decode([`data: ${'✓'.repeat(34)}\n\n`], 100)).toThrow(SseEventTooLargeError);
  });

  it('refuses an event whose data lines add up past the limit, and a line that never ends', () => {
    const decoder = new SseDecoder({ maxEventBytes: 1000 });
    expect(() => {
      for (let i = 0; i < 20; i += 1) decoder.push(`data: ${'y'.repeat(60)}\n`);
    }).toThrow(SseEventTooLargeError);
    const endless = new SseDecoder({ maxEventBytes: 1000 });
    const error = (() => {
      try {
        for (let i = 0; i < 100; i += 1) endless.push(`${'z'.repeat(64)}`);
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(SseEventTooLargeError);
    expect((error as SseEventTooLargeError).limit).toBe(1000);
  });

  it('lets a long stream of small events through: the limit is per event', () => {
    const decoder = new SseDecoder({ maxEventBytes: 100 });
    let count = 0;
    for (let i = 0; i < 1000; i += 1) count += decoder.push(`data: ${'x'.repeat(90)}\n\n`).length;
    expect(count).toBe(1000);
  });

  it('hands out text after the last event that is no SSE field (a bare error) at the end, as one event', () => {
    const decoder = new SseDecoder({ maxEventBytes: 1000 });
    const error = '{\n  "error": {\n    "code": 503,\n    "status": "UNAVAILABLE"\n  }\n}';
    expect(decoder.push(`data: {"a":1}\r\n\r\n${error}\n`)).toEqual([{ name: undefined, data: '{"a":1}' }]);
    expect(decoder.end()).toEqual([{ name: undefined, data: error }]);
    const clean = new SseDecoder({ maxEventBytes: 1000 });
    clean.push('data: x\n\nid: 7\n: comment\n');
    expect(clean.end()).toEqual([]);
  });
});
