import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * The worker: counts o200k tokens of each text it is sent. BPE merging is quadratic in the length of a
 * run the pre-tokenizer does not split (a long run of one character), which is why counting never runs on
 * the event loop.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { countTokens } = require(workerData.tokenizer);
parentPort.postMessage({ ready: true });
parentPort.on('message', (m) => {
  let reply;
  try {
    reply = { id: m.id, counts: m.texts.map((t) => countTokens(t)) };
  } catch (err) {
    reply = { id: m.id, error: String((err && err.message) || err) };
  }
  parentPort.postMessage(reply);
});
`;

/** After this long without a job the thread ends (its tokenizer tables, tens of MB, with it). */
const DEFAULT_IDLE_MS = 30_000;

export interface TokenCount {
  /** One count per text. */
  counts: number[];
  /** False when the tokenizer did not answer in time and UTF-8 byte counts (an upper bound) stand in. */
  exact: boolean;
}

interface Job {
  texts: string[];
  /** Settles the job once; later calls do nothing. */
  resolve: (count: TokenCount) => void;
}

/** The UTF-8 byte count of each text: a BPE token is at least one byte, so this bounds its tokens. */
function estimate(job: Job): TokenCount {
  return { counts: job.texts.map((t) => Buffer.byteLength(t, 'utf8')), exact: false };
}

/**
 * Counts tokens with the o200k tokenizer on a worker thread, one job at a time, each bounded in time: a
 * job not answered `timeoutMs` after it was asked gets byte counts (an upper bound); if it was running,
 * its thread is terminated (a thread stuck in a long merge cannot be interrupted otherwise) and a new one
 * starts loading the tokenizer. Jobs wait in order until the thread has loaded it, each with its own
 * deadline, so no caller waits longer than `timeoutMs` and the event loop never does. The thread starts
 * with the first job (or `preload()`) and ends after a while without one; it never keeps the process
 * alive.
 */
export class TokenCounter {
  private worker: Worker | undefined;
  /** Whether the thread has loaded the tokenizer. */
  private ready = false;
  private readonly queue: Job[] = [];
  private running: { id: number; job: Job } | undefined;
  private nextId = 1;
  private idleTimer: NodeJS.Timeout | undefined;
  private readonly tokenizer = createRequire(import.meta.url).resolve('gpt-tokenizer/encoding/o200k_base');

  constructor(
    private readonly timeoutMs: number,
    private readonly idleMs: number = DEFAULT_IDLE_MS,
  ) {}

  /** Token counts of `texts`, exact when the tokenizer answers within the time bound. */
  count(texts: string[]): Promise<TokenCount> {
    if (texts.length === 0) return Promise.resolve({ counts: [], exact: true });
    return new Promise((resolve) => {
      let settled = false;
      const job: Job = {
        texts,
        resolve: (count) => {
          if (settled) return;
          settled = true;
          clearTimeout(deadline);
          resolve(count);
        },
      };
      const deadline = setTimeout(() => this.giveUp(job), this.timeoutMs);
      deadline.unref();
      this.queue.push(job);
      this.pump();
    });
  }

  /** Starts the thread now, so the first count does not wait for the tokenizer to load. */
  preload(): void {
    this.thread();
  }

  /** Ends the thread; jobs still waiting get byte counts. */
  async close(): Promise<void> {
    for (const job of this.queue.splice(0)) job.resolve(estimate(job));
    this.running?.job.resolve(estimate(this.running.job));
    this.running = undefined;
    await this.stop();
  }

  /** A job past its deadline gets byte counts; if it was running, its thread goes. */
  private giveUp(job: Job): void {
    job.resolve(estimate(job));
    const queued = this.queue.indexOf(job);
    if (queued !== -1) {
      this.queue.splice(queued, 1);
    } else if (this.running?.job === job) {
      // Stuck in a long merge: only ending the thread stops it. A new one starts loading the tokenizer at
      // once, so the next jobs do not wait for that.
      this.running = undefined;
      void this.stop();
      this.thread();
    }
  }

  /** Sends the next job to the thread once it has loaded the tokenizer (until then jobs wait). */
  private pump(): void {
    if (this.running || this.queue.length === 0) return;
    const worker = this.thread();
    if (!this.ready) return;
    const job = this.queue.shift() as Job;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    const id = this.nextId++;
    this.running = { id, job };
    worker.postMessage({ id, texts: job.texts });
  }

  /** The thread answered job `id` (`counts` undefined: it failed or was lost). */
  private finish(id: number, counts: number[] | undefined): void {
    const running = this.running;
    if (!running || running.id !== id) return;
    this.running = undefined;
    running.job.resolve(counts === undefined ? estimate(running.job) : { counts, exact: true });
    if (this.queue.length === 0) {
      this.idleTimer = setTimeout(() => void this.stop(), this.idleMs);
      this.idleTimer.unref();
    }
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { tokenizer: this.tokenizer } });
    worker.unref();
    worker.on('message', (m: { ready?: true; id: number; counts?: number[] }) => {
      if (m.ready) {
        if (this.worker === worker) {
          this.ready = true;
          this.pump();
        }
        return;
      }
      this.finish(m.id, m.counts);
      this.pump();
    });
    const lost = () => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      if (this.running) this.finish(this.running.id, undefined);
      this.pump();
    };
    // An error ends the thread too ('exit' follows); either way its job gets byte counts.
    worker.on('error', lost);
    worker.on('exit', lost);
    this.worker = worker;
    this.ready = false;
    return worker;
  }

  private async stop(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    if (worker) await worker.terminate();
  }
}
