import type { FastifyReply } from 'fastify';
import { OVERHEAD_HEADER } from './overhead.js';

/**
 * The server-sent events of one response, whatever their format: headers sent once (`open`), writes that
 * follow the client's pace — when the socket's buffer is full, `write` returns a promise that settles on
 * 'drain' — and a client that takes nothing for `stallTimeoutMs`, or is still behind at `deadline`, has
 * its connection closed (docs/api.md, Streaming). Used by every door: chat (`SseResponse`), Messages and
 * Responses.
 */
export class SseChannel {
  private gone = false;
  private opened = false;
  private readonly goneListeners: Array<() => void> = [];

  constructor(
    private readonly reply: FastifyReply,
    private readonly limits: { stallTimeoutMs: number; deadline: number; now?: () => number },
  ) {
    const response = reply.raw;
    response.on('close', () => {
      if (response.writableFinished) return;
      this.gone = true;
      for (const listener of this.goneListeners.splice(0)) listener();
    });
  }

  get begun(): boolean {
    return this.opened;
  }

  get clientGone(): boolean {
    return this.gone;
  }

  onClientGone(listener: () => void): void {
    if (this.gone) listener();
    else this.goneListeners.push(listener);
  }

  /** Sends the headers: the reply's own, the event-stream ones, and `extra`. */
  open(extra: Record<string, string>): void {
    const { reply } = this;
    reply.hijack();
    const headers: Record<string, string | number | string[]> = {};
    for (const [name, value] of Object.entries(reply.getHeaders())) {
      if (value !== undefined) headers[name] = value;
    }
    headers['content-type'] = 'text/event-stream; charset=utf-8';
    headers['cache-control'] = 'no-cache';
    // nginx and other proxies buffer responses unless told not to; an event must go out as it is written.
    headers['x-accel-buffering'] = 'no';
    if (reply.request.overhead) headers[OVERHEAD_HEADER] = reply.request.overhead.header();
    Object.assign(headers, extra);
    reply.raw.writeHead(200, headers);
    this.opened = true;
  }

  write(text: string): Promise<void> | undefined {
    const response = this.reply.raw;
    if (this.gone || text === '') return undefined;
    if (response.write(text)) return undefined;
    // A connection closed for stalling emits 'close' too: the relay then finds the client gone.
    const now = this.limits.now ?? Date.now;
    const wait = Math.min(this.limits.stallTimeoutMs, this.limits.deadline - now());
    return new Promise((resolve) => this.cutUnless(['drain', 'close'], Math.max(0, wait), resolve));
  }

  /**
   * The last events (the call is settled by now): a client that never takes them still has its
   * connection closed, after the stall timeout — not at the deadline, which an upstream cut at the
   * deadline reaches just as it sends them.
   */
  end(text: string): void {
    const response = this.reply.raw;
    response.end(text);
    if (!this.gone && !response.writableFinished) {
      this.cutUnless(['finish', 'close'], this.limits.stallTimeoutMs, () => {});
    }
  }

  /** Closes the connection unless one of `events` comes within `wait` ms; `then` runs on the first of them. */
  private cutUnless(events: readonly ('drain' | 'close' | 'finish')[], wait: number, then: () => void): void {
    const response = this.reply.raw;
    const done = (): void => {
      clearTimeout(timer);
      for (const event of events) response.off(event, done);
      then();
    };
    // A client that takes nothing is treated as one that left: its socket goes, and with it what is
    // buffered for it.
    const timer = setTimeout(() => response.destroy(), wait);
    for (const event of events) response.on(event, done);
  }
}
