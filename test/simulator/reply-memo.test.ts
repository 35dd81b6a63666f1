import { describe, expect, it } from 'vitest';
import { composedReplies, composeReply, composeReplyNow } from '../../src/simulator/reply.js';

describe("the simulator's composed replies, kept by their inputs", () => {
  it('answers every input as composing it afresh would, however the inputs differ', () => {
    const inputs: [string, string, number, string[]][] = [
      ['deepseek', 'hi', 16, []],
      ['deepseek', 'hi', 5, []],
      ['deepseek', 'hi', 16, ['quiet']],
      ['deepseek', 'hi', 16, ['quiet', 'harbor']],
      ['qwen', 'hi', 16, []],
      ['deepseek', 'hi there', 16, []],
      // Inputs whose parts, run together, read the same.
      ['deep', 'seekhi', 16, []],
      ['deepseek', 'hi', 16, ['a,b']],
      ['deepseek', 'hi', 16, ['a', 'b']],
      ['deepseek', 'x'.repeat(2000), 7, []],
    ];
    for (let round = 0; round < 2; round++) {
      for (const [slug, text, cap, stops] of inputs) {
        expect(composeReply(slug, text, cap, stops)).toEqual(composeReplyNow(slug, text, cap, stops));
      }
    }
    // Inputs that differ only in the cap or the stops get their own replies.
    expect(composeReply('deepseek', 'hi', 4096, []).finish).toBe('stop');
    expect(composeReply('deepseek', 'hi', 5, []).finish).toBe('length');
    expect(composeReply('deepseek', 'hi', 4096, ['Simulated'])).toMatchObject({
      text: '',
      finish: 'stop_sequence',
    });
  });

  it('keeps at most 512 replies, and the replies kept cannot be changed by a caller', () => {
    for (let i = 0; i < 2000; i++) composeReply('deepseek', `prompt ${i}`, 16, []);
    expect(composedReplies()).toBeLessThanOrEqual(512);
    const reply = composeReply('deepseek', 'prompt 1999', 16, []);
    expect(Object.isFrozen(reply)).toBe(true);
    expect(reply).toEqual(composeReplyNow('deepseek', 'prompt 1999', 16, []));
    // Long prompts are composed every time, never kept.
    const before = composedReplies();
    composeReply('deepseek', 'y'.repeat(5000), 16, []);
    expect(composedReplies()).toBe(before);
  });
});
