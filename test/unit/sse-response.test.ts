import { EventEmitter } from 'node:events';
import type { FastifyReply } from 'fastify';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SseResponse } from '../../src/api/sse-response.js';
import { GatewayError } from '../../src/errors.js';

/**
 * The stream's waits for a slow client, on a stand-in response whose socket never takes more
 * (`write` → false) until the test says 'drain': a wait ends on 'drain' and leaves nothing behind; a
 * client that takes nothing for the stall timeout, or is still behind at the stream's deadline, has its
 * connection closed, and the stream sees it gone.
 */

class FakeResponse extends EventEmitter {
  writableFinished = false;
  destroyed = 0;
  written: string[] = [];
  writeHead(): void {}
  write(text: string): boolean {
    this.written.push(text);
    return false;
  }
  end(text: string): void {
    this.written.push(text);
  }
  destroy(): void {
    this.destroyed++;
    this.emit('close');
  }
}

let now = 0;

function sink(stallTimeoutMs: number, deadline: number) {
  const raw = new FakeResponse();
  const reply = { raw, request: {}, hijack() {}, getHeaders: () => ({}) } as unknown as FastifyReply;
  const response = new SseResponse(
    reply,
    { id: 'chatcmpl-test', created: 0, includeUsage: false, legacyFunctions: false },
    { stallTimeoutMs, deadline, now: () => now },
  );
  response.begin({ provider: 'prov-deepseek', model: 'm', droppedParams: [] });
  return { raw, response };
}

const text = (t: string) => [{ type: 'text' as const, choice: 0, text: t }];

beforeEach(() => {
  vi.useFakeTimers();
  now = 0;
});
afterEach(() => {
  vi.useRealTimers();
});

describe('SseResponse waits for a slow client', () => {
  it('a wait ends on drain, and no timer of it closes the connection later', async () => {
    const { raw, response } = sink(1_000, 600_000);
    for (let i = 0; i < 5; i++) {
      const wait = response.send(text(`piece ${i}`));
      expect(wait).toBeInstanceOf(Promise);
      vi.advanceTimersByTime(900);
      raw.emit('drain');
      await wait;
    }
    vi.advanceTimersByTime(10_000);
    expect(raw.destroyed).toBe(0);
    expect(response.clientGone).toBe(false);
    expect(raw.listenerCount('drain')).toBe(0);
  });

  it('a client that takes nothing for the stall timeout is cut, and seen gone', async () => {
    const { raw, response } = sink(1_000, 600_000);
    let gone = 0;
    response.onClientGone(() => gone++);
    const wait = response.send(text('piece'));
    vi.advanceTimersByTime(999);
    expect(raw.destroyed).toBe(0);
    vi.advanceTimersByTime(1);
    await wait;
    expect(raw.destroyed).toBe(1);
    expect(response.clientGone).toBe(true);
    expect(gone).toBe(1);
    // Nothing more is written to a client that is gone: no buffering behind a dead socket.
    const count = raw.written.length;
    expect(response.send(text('more'))).toBeUndefined();
    expect(raw.written.length).toBe(count);
  });

  it('the stream deadline ends a wait sooner than the stall timeout', async () => {
    now = 5_000;
    const { raw, response } = sink(600_000, 7_000);
    const wait = response.send(text('piece'));
    vi.advanceTimersByTime(1_999);
    expect(raw.destroyed).toBe(0);
    vi.advanceTimersByTime(1);
    await wait;
    expect(raw.destroyed).toBe(1);
    expect(response.clientGone).toBe(true);
  });

  it('the last events: a client that never takes them is cut after the stall timeout, even past the deadline', () => {
    now = 10_000;
    const taken = sink(1_000, 9_000);
    taken.response.fail(new GatewayError('internal_error', 'broke'));
    taken.raw.emit('finish');
    vi.advanceTimersByTime(5_000);
    expect(taken.raw.destroyed).toBe(0);

    const never = sink(1_000, 9_000);
    never.response.fail(new GatewayError('internal_error', 'broke'));
    // Not at once (the deadline is past, but the events must have their chance to go out).
    vi.advanceTimersByTime(999);
    expect(never.raw.destroyed).toBe(0);
    vi.advanceTimersByTime(1);
    expect(never.raw.destroyed).toBe(1);
  });
});
