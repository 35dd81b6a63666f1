/** One server-sent event: its `event` name (`undefined` when it had none) and its `data` text. */
export interface SseEvent {
  name: string | undefined;
  data: string;
}

/** Thrown by `SseDecoder` when an event, or a line still waiting for its end, outgrows the decoder's limit. */
export class SseEventTooLargeError extends Error {
  readonly limit: number;

  constructor(limit: number) {
    super(`server-sent event larger than ${limit} bytes`);
    this.name = 'SseEventTooLargeError';
    this.limit = limit;
  }
}

const LF = 10;

/**
 * An incremental reader of a `text/event-stream` body, as the HTML standard's "event stream
 * interpretation" says: chunks go in as they arrive (bytes or text, cut anywhere, a multi-byte UTF-8
 * character included) and complete events come out. Lines end in LF, CRLF or CR (a CRLF cut between two
 * chunks is one line end); a leading byte-order mark is skipped; `data:` lines are joined with LF; `event:`
 * names the event; a line starting with a colon is a comment; one space after the colon is dropped;
 * `id`, `retry` and unknown fields are ignored; a blank line ends the event, which is handed out only when
 * it had a `data` field.
 *
 * Memory is bounded: what an event holds (its data and name) plus the line still being read may not pass
 * `maxEventBytes` UTF-8 bytes, else `push` throws `SseEventTooLargeError`.
 *
 * @see https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation
 */
export class SseDecoder {
  private readonly maxEventBytes: number;
  private readonly utf8 = new TextDecoder('utf-8');
  /** The start of a line that has not ended yet, in pieces (joined once its end arrives). */
  private partial: string[] = [];
  private partialBytes = 0;
  /** The last chunk ended in CR: an LF at the start of the next one ends no second line. */
  private afterCR = false;
  private started = false;
  private data: string[] = [];
  private dataBytes = 0;
  private name = '';
  private nameBytes = 0;
  /** Lines since the last event that were no SSE field (see `end`). */
  private stray: string[] = [];
  private strayBytes = 0;

  constructor(options: { maxEventBytes: number }) {
    this.maxEventBytes = options.maxEventBytes;
  }

  /** Reads one more piece of the body; returns the events it completed, in order. */
  push(chunk: Uint8Array | string): SseEvent[] {
    // The TextDecoder skips a leading byte-order mark itself; text handed in as a string is checked here.
    let text = typeof chunk === 'string' ? chunk : this.utf8.decode(chunk, { stream: true });
    if (text === '') return [];
    if (!this.started) {
      this.started = true;
      if (typeof chunk === 'string' && text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    const events: SseEvent[] = [];
    this.scan(text, events);
    return events;
  }

  /**
   * The body ended: whatever is left is an event without its closing blank line, which the standard
   * drops (its last data line may be cut short). Returns the text that followed the last event outside
   * any SSE field, as one event without a name, when there was some: Gemini ends a failing stream with
   * its JSON error written bare, and that error must not be lost.
   */
  end(): SseEvent[] {
    this.utf8.decode();
    if (this.partial.length > 0) this.stray.push(this.completeLine(''));
    this.partial = [];
    this.partialBytes = 0;
    this.reset();
    const stray = this.stray.join('\n').trim();
    this.stray = [];
    return stray === '' ? [] : [{ name: undefined, data: stray }];
  }

  private scan(text: string, events: SseEvent[]): void {
    let start = 0;
    if (this.afterCR && text.charCodeAt(0) === LF) start = 1;
    this.afterCR = false;
    // The next CR and LF are each looked for once and kept until passed: a body with one kind of line
    // end is scanned once, not once per line.
    let nextCR = text.indexOf('\r', start);
    let nextLF = text.indexOf('\n', start);
    while (nextCR !== -1 || nextLF !== -1) {
      const end = nextCR === -1 ? nextLF : nextLF === -1 ? nextCR : Math.min(nextCR, nextLF);
      this.line(this.completeLine(text.slice(start, end)), events);
      start = end + 1;
      if (end === nextCR) {
        if (start === text.length) this.afterCR = true;
        else if (text.charCodeAt(start) === LF) start += 1;
      }
      if (nextCR !== -1 && nextCR < start) nextCR = text.indexOf('\r', start);
      if (nextLF !== -1 && nextLF < start) nextLF = text.indexOf('\n', start);
    }
    if (start < text.length) {
      const rest = text.slice(start);
      this.partialBytes += Buffer.byteLength(rest, 'utf8');
      this.partial.push(rest);
      this.checkSize(this.partialBytes);
    }
  }

  /** The line that just ended: the pieces kept from earlier chunks, then `tail`. */
  private completeLine(tail: string): string {
    if (this.partial.length === 0) return tail;
    this.partial.push(tail);
    const line = this.partial.join('');
    this.partial = [];
    this.partialBytes = 0;
    return line;
  }

  private line(line: string, events: SseEvent[]): void {
    if (line === '') {
      this.dispatch(events);
      return;
    }
    const colon = line.indexOf(':');
    if (colon === 0) return;
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 0x20) value = value.slice(1);
    if (field === 'data') {
      // The bytes of the data text as handed out: the values joined with LF.
      this.dataBytes += Buffer.byteLength(value, 'utf8') + (this.data.length > 0 ? 1 : 0);
      this.checkSize(0);
      this.data.push(value);
    } else if (field === 'event') {
      this.name = value;
      this.nameBytes = Buffer.byteLength(value, 'utf8');
      this.checkSize(0);
    } else if (field !== 'id' && field !== 'retry') {
      // Not an SSE field: kept (bounded) in case the body ends with a bare error (see `end`).
      this.strayBytes += Buffer.byteLength(line, 'utf8') + 1;
      this.checkSize(this.strayBytes);
      this.stray.push(line);
    }
  }

  private dispatch(events: SseEvent[]): void {
    if (this.data.length > 0) {
      this.stray = [];
      this.strayBytes = 0;
      events.push({ name: this.name === '' ? undefined : this.name, data: this.data.join('\n') });
    }
    this.reset();
  }

  private reset(): void {
    this.data = [];
    this.dataBytes = 0;
    this.name = '';
    this.nameBytes = 0;
  }

  private checkSize(lineBytes: number): void {
    if (this.dataBytes + this.nameBytes + lineBytes > this.maxEventBytes) {
      throw new SseEventTooLargeError(this.maxEventBytes);
    }
  }
}
