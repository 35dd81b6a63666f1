/**
 * Writes a stream plan: the head at once, then one content step at a time at the configured pace, then the
 * tail — or, with a stream fault, breaks off after `afterChunks` steps. A step is written only once the
 * previous ones are taken (`write()` returning false waits for 'drain'), so a client that reads slowly holds
 * the simulator back instead of making it buffer the whole answer. A close by the other side stops it at
 * once and is recorded (`client_closed`, with the time), as is how far it got.
 */
import type { Writable } from 'node:stream';
import type { StreamFault } from './faults.js';
import type { StreamPlan } from './stream-plan.js';
import type { SimStream } from './types.js';

export interface StreamRun {
  plan: StreamPlan;
  /** Content steps per second; 0 = as fast as the client takes them. */
  perSecond: number;
  fault: StreamFault | null;
  /** The frame a `stream_error` fault ends the stream with, after `sent` content steps. */
  errorFrame(sent: number): string;
  /** Updated as the stream goes. */
  record: SimStream;
  /** Whether the simulator is shutting down (a close then is its own, not the client's). */
  closing(): boolean;
}

export async function pumpStream(out: Writable, run: StreamRun): Promise<void> {
  const { plan, record } = run;
  let closed = out.destroyed;
  /** Ends the current wait (a pause or a drain) early: the stream was closed. */
  let wake: (() => void) | null = null;
  const end = (outcome: SimStream['outcome']) => {
    record.outcome = outcome;
    record.endedAt = Date.now();
  };
  out.once('close', () => {
    closed = true;
    if (record.outcome === 'open' || record.outcome === 'stalled') {
      if (run.closing()) end('shutdown');
      else {
        end('client_closed');
        record.closedEarlyAt = record.endedAt;
      }
    }
    wake?.();
  });

  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        wake = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      wake = done;
    });
  const drained = () =>
    new Promise<void>((resolve) => {
      const done = () => {
        out.off('drain', done);
        wake = null;
        resolve();
      };
      out.on('drain', done);
      wake = done;
    });
  /** Settles once the last frames written are handed to the socket (or the stream is destroyed). */
  let flushed: Promise<void> = Promise.resolve();
  /** Writes the frames; false when the writer must wait for 'drain'. */
  const write = (frames: readonly string[]): boolean => {
    if (frames.length === 0) return true;
    let ok = true;
    flushed = new Promise<void>((resolve) => {
      ok = out.write(frames.join(''), () => resolve());
    });
    return ok;
  };

  if (closed) return;
  const started = Date.now();
  if (!write(plan.head)) await drained();
  const interval = run.perSecond > 0 ? 1000 / run.perSecond : 0;
  const stopAt = run.fault === null ? plan.steps.length : Math.min(run.fault.afterChunks, plan.steps.length);
  for (let k = 0; k < stopAt && !closed; k++) {
    // Paced from the start, so that slow timers do not add up.
    const wait = interval > 0 ? started + k * interval - Date.now() : 0;
    if (wait > 0) await pause(wait);
    if (closed) return;
    const ok = write(plan.steps[k] as string[]);
    record.piecesSent = k + 1;
    if (!ok) await drained();
  }
  if (closed) return;
  switch (run.fault?.kind) {
    case 'cut':
      end('cut');
      // What was written reaches the client; then the connection drops without the ending events.
      await flushed;
      out.destroy();
      return;
    case 'stall':
      record.outcome = 'stalled';
      return; // until the client (or close()) closes it
    case 'stream_error':
      end('error_event');
      out.end(run.errorFrame(record.piecesSent));
      return;
    default:
      end('complete');
      out.end(plan.tail.join(''));
  }
}
