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

/** After this long without a piece to count a thread ends (its tokenizer tables, tens of MB, with it). */
const DEFAULT_IDLE_MS = 30_000;

/**
 * About how many characters a thread counts at a time: a long text is cut into pieces of this size, so a
 * job waiting for a thread waits for one piece, never for the whole of a long text.
 */
const PIECE_CHARS = 2_048;

/**
 * The longest piece a cut makes: a piece ends at the first cut point past `PIECE_CHARS` and within this.
 * A longer piece is a text with no cut point in reach, which can take the tokenizer very long.
 */
const LONGEST_PIECE = 2 * PIECE_CHARS;

/**
 * Where a text can be cut without changing its count: before a character that is neither a letter, a mark,
 * a digit nor a line break, between a letter (or mark) and a letter — a space between two words, a comma
 * or full stop between two CJK characters. The o200k pre-tokenizer ends a run of letters at such a
 * character and starts the next word with it, and BPE never merges across pre-tokens, so the counts of the
 * two sides add up to the count of the whole. Not before `'` (a contraction's `'s` stays with its word),
 * nor `_`, which joins the words of special tokens like `<|im_start|>` (a text holding one is refused by
 * the tokenizer, whole or in pieces).
 */
const CUT = /(?<=[\p{L}\p{M}])[^\r\n\p{L}\p{M}\p{N}'_](?=\p{L})/u;

export interface TokenCount {
  /** One count per text. */
  counts: number[];
  /** False when the tokenizer did not answer in time and UTF-8 byte counts (an upper bound) stand in. */
  exact: boolean;
}

export interface TokenCounterOptions {
  /** Most threads counting at once (at least 1; each loads its own copy of the tokenizer). */
  threads?: number;
  /** A thread ends after this long without a piece to count. */
  idleMs?: number;
}

interface Job {
  /** Whose job it is: owners take turns at the threads. */
  owner: string;
  /** Arrival order, which decides between two of an owner's jobs with as much left to count. */
  seq: number;
  texts: string[];
  /** The counts so far, one per text. */
  counts: number[];
  /** Pieces not yet sent to a thread, in order. */
  waiting: Piece[];
  /** Characters not yet counted (waiting and running pieces). */
  left: number;
  /** Pieces on a thread now. */
  running: number;
  settled: boolean;
  /** Settles the job once; later calls do nothing. */
  resolve: (count: TokenCount) => void;
}

/** Some of a job's text: whole short texts, or a stretch of a long one, each part with its text's index. */
interface Piece {
  job: Job;
  parts: { index: number; text: string }[];
  chars: number;
}

interface Thread {
  worker: Worker;
  /** Whether it has loaded the tokenizer. */
  ready: boolean;
  /** Started by `preload()` and not yet given work: it waits for its first piece however long. */
  preloaded: boolean;
  piece: { id: number; piece: Piece } | undefined;
  idleTimer: NodeJS.Timeout | undefined;
}

/** The UTF-8 byte count of each text: a BPE token is at least one byte, so this bounds its tokens. */
function estimate(job: Job): TokenCount {
  return { counts: job.texts.map((t) => Buffer.byteLength(t, 'utf8')), exact: false };
}

/**
 * Where to end a piece of `text` that starts at `start`: the first cut point (`CUT`) past `PIECE_CHARS`
 * and within `LONGEST_PIECE`; -1 when there is none, and the rest stays whole. Only that stretch is
 * searched: the event loop reads at most `LONGEST_PIECE - PIECE_CHARS` characters per piece.
 */
function cutPoint(text: string, start: number): number {
  const from = start + PIECE_CHARS;
  const found = CUT.exec(text.slice(from - 1, start + LONGEST_PIECE + 1));
  return found === null ? -1 : from - 1 + found.index;
}

/**
 * A job's texts in pieces of about `PIECE_CHARS` characters: a text longer than `LONGEST_PIECE` is cut
 * where `cutPoint` allows (from where it cannot, it stays whole), shorter ones share a piece.
 */
function piecesOf(job: Job): Piece[] {
  const pieces: Piece[] = [];
  let current: Piece | undefined;
  const add = (index: number, text: string) => {
    if (current === undefined || current.chars + text.length > PIECE_CHARS) {
      current = { job, parts: [], chars: 0 };
      pieces.push(current);
    }
    current.parts.push({ index, text });
    current.chars += text.length;
  };
  job.texts.forEach((text, index) => {
    let start = 0;
    while (text.length - start > LONGEST_PIECE) {
      const cut = cutPoint(text, start);
      if (cut === -1) break;
      add(index, text.slice(start, cut));
      start = cut;
    }
    add(index, start === 0 ? text : text.slice(start));
  });
  return pieces;
}

/**
 * A job of at most this many characters in all is small: counted on a thread of its own (`TokenCounter`).
 */
const SMALL_JOB_CHARS = PIECE_CHARS;

/**
 * Counts tokens with the o200k tokenizer on worker threads (`threads`, 1 by default), each job bounded in
 * time: a job not answered `timeoutMs` after it was asked gets byte counts (an upper bound). A thread
 * counting a piece of it longer than `LONGEST_PIECE` (a text that could not be cut, maybe stuck in a long
 * merge, which cannot be interrupted otherwise) is then terminated and a new one starts loading the
 * tokenizer; a shorter piece is left to finish.
 *
 * Fair between owners: jobs are counted in pieces (`PIECE_CHARS`), and the owners with pieces waiting
 * take turns, one piece each, whenever a thread is free; of one owner's jobs, the one with the least left
 * to count goes first. So an owner's many long texts delay another owner's short one by about one piece
 * per thread, and its own short ones likewise. Jobs wait until a thread has loaded the tokenizer, each with
 * its own deadline, so no caller waits longer than `timeoutMs` and the event loop never does. Threads start
 * with work to do (or `preload()`), up to `threads` while pieces wait, and end after a while without any;
 * they never keep the process alive.
 */
class TokenPool {
  private readonly threads: Thread[] = [];
  private readonly size: number;
  private readonly idleMs: number;
  /** Owners with pieces waiting, in turn order: the first sends the next piece, then goes last. */
  private readonly turns: string[] = [];
  /** Each owner's jobs with pieces waiting. */
  private readonly waiting = new Map<string, Job[]>();
  private waitingPieces = 0;
  private nextId = 1;
  private nextSeq = 1;
  private readonly tokenizer = createRequire(import.meta.url).resolve('gpt-tokenizer/encoding/o200k_base');

  constructor(
    private readonly timeoutMs: number,
    options: TokenCounterOptions = {},
  ) {
    this.size = Math.max(1, Math.floor(options.threads ?? 1));
    this.idleMs = options.idleMs ?? DEFAULT_IDLE_MS;
  }

  /**
   * Token counts of `texts`, exact when the tokenizer answers within the time bound. `owner` (the account
   * the texts are counted for) takes turns with the other owners.
   */
  count(texts: string[], owner = ''): Promise<TokenCount> {
    if (texts.length === 0) return Promise.resolve({ counts: [], exact: true });
    return new Promise((resolve) => {
      const job: Job = {
        owner,
        seq: this.nextSeq++,
        texts,
        counts: texts.map(() => 0),
        waiting: [],
        left: 0,
        running: 0,
        settled: false,
        resolve: (count) => {
          if (job.settled) return;
          job.settled = true;
          clearTimeout(deadline);
          resolve(count);
        },
      };
      job.waiting = piecesOf(job);
      for (const piece of job.waiting) job.left += piece.chars;
      const deadline = setTimeout(() => this.giveUp(job), this.timeoutMs);
      deadline.unref();
      this.enqueue(job);
      this.pump();
    });
  }

  /** Starts a thread now, so the first count does not wait for the tokenizer to load. */
  preload(): void {
    if (this.threads.length === 0) this.spawn().preloaded = true;
  }

  /** Ends the threads; jobs still waiting or running get byte counts. */
  async close(): Promise<void> {
    for (const jobs of this.waiting.values()) for (const job of jobs) job.resolve(estimate(job));
    this.waiting.clear();
    this.turns.length = 0;
    this.waitingPieces = 0;
    const threads = this.threads.splice(0);
    for (const thread of threads) {
      if (thread.piece) thread.piece.piece.job.resolve(estimate(thread.piece.piece.job));
      if (thread.idleTimer) clearTimeout(thread.idleTimer);
    }
    await Promise.all(threads.map((thread) => thread.worker.terminate()));
  }

  private enqueue(job: Job): void {
    let jobs = this.waiting.get(job.owner);
    if (jobs === undefined) {
      jobs = [];
      this.waiting.set(job.owner, jobs);
      this.turns.push(job.owner);
    }
    jobs.push(job);
    this.waitingPieces += job.waiting.length;
  }

  /** The next piece to count: the next owner's turn, its job with the least left to count. */
  private nextPiece(): Piece | undefined {
    const owner = this.turns.shift();
    if (owner === undefined) return undefined;
    const jobs = this.waiting.get(owner) as Job[];
    let job = jobs[0] as Job;
    for (const other of jobs) {
      if (other.left < job.left || (other.left === job.left && other.seq < job.seq)) job = other;
    }
    const piece = job.waiting.shift() as Piece;
    this.waitingPieces--;
    if (job.waiting.length === 0) jobs.splice(jobs.indexOf(job), 1);
    if (jobs.length > 0) this.turns.push(owner);
    else this.waiting.delete(owner);
    return piece;
  }

  /** Takes the job's waiting pieces out of the queue. */
  private drop(job: Job): void {
    if (job.waiting.length === 0) return;
    this.waitingPieces -= job.waiting.length;
    job.waiting = [];
    const jobs = this.waiting.get(job.owner);
    if (jobs === undefined) return;
    jobs.splice(jobs.indexOf(job), 1);
    if (jobs.length === 0) {
      this.waiting.delete(job.owner);
      this.turns.splice(this.turns.indexOf(job.owner), 1);
    }
  }

  /** A job that failed or is past its deadline gets byte counts, and its waiting pieces go. */
  private fail(job: Job): void {
    job.resolve(estimate(job));
    this.drop(job);
  }

  /**
   * A job past its deadline gets byte counts. A thread still counting a piece of it longer than
   * `LONGEST_PIECE` (not cut to size) goes; a shorter piece is left to finish (soon), its count unused.
   */
  private giveUp(job: Job): void {
    this.fail(job);
    for (const thread of [...this.threads]) {
      const running = thread.piece?.piece;
      if (running?.job !== job || running.chars <= LONGEST_PIECE) continue;
      // Maybe stuck in a long merge: only ending the thread stops it. A new one starts loading the
      // tokenizer at once, so the next jobs do not wait for that.
      this.end(thread);
      this.spawn();
    }
    this.pump();
  }

  /** Sends waiting pieces to the free threads that have loaded the tokenizer; starts threads as needed. */
  private pump(): void {
    for (const thread of this.threads) {
      if (this.waitingPieces === 0) break;
      if (thread.ready && thread.piece === undefined) this.send(thread, this.nextPiece() as Piece);
    }
    let loading = 0;
    for (const thread of this.threads) if (!thread.ready) loading++;
    while (this.waitingPieces > loading && this.threads.length < this.size) {
      this.spawn();
      loading++;
    }
  }

  private send(thread: Thread, piece: Piece): void {
    if (thread.idleTimer) clearTimeout(thread.idleTimer);
    thread.idleTimer = undefined;
    thread.preloaded = false;
    const id = this.nextId++;
    thread.piece = { id, piece };
    piece.job.running++;
    thread.worker.postMessage({ id, texts: piece.parts.map((part) => part.text) });
  }

  /** The thread answered piece `id` (`counts` undefined: it failed). */
  private finish(thread: Thread, id: number, counts: number[] | undefined): void {
    const running = thread.piece;
    if (!running || running.id !== id) return;
    thread.piece = undefined;
    const { piece } = running;
    const { job } = piece;
    job.running--;
    if (counts === undefined) this.fail(job);
    else if (!job.settled) {
      piece.parts.forEach((part, i) => {
        job.counts[part.index] = (job.counts[part.index] as number) + (counts[i] as number);
      });
      job.left -= piece.chars;
      if (job.waiting.length === 0 && job.running === 0) job.resolve({ counts: job.counts, exact: true });
    }
  }

  /** With nothing waiting, a free thread ends after `idleMs` (a preloaded one waits for its first piece). */
  private idleWhenFree(thread: Thread): void {
    if (this.waitingPieces > 0 || thread.preloaded || thread.idleTimer) return;
    thread.idleTimer = setTimeout(() => this.end(thread), this.idleMs);
    thread.idleTimer.unref();
  }

  private spawn(): Thread {
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { tokenizer: this.tokenizer } });
    worker.unref();
    const thread: Thread = { worker, ready: false, preloaded: false, piece: undefined, idleTimer: undefined };
    worker.on('message', (m: { ready?: true; id: number; counts?: number[] }) => {
      if (!this.threads.includes(thread)) return;
      if (m.ready) thread.ready = true;
      else this.finish(thread, m.id, m.counts);
      this.pump();
      if (thread.piece === undefined) this.idleWhenFree(thread);
    });
    const lost = () => {
      if (!this.threads.includes(thread)) return;
      const job = thread.piece?.piece.job;
      this.end(thread);
      if (job) this.fail(job);
      this.pump();
    };
    // An error ends the thread too ('exit' follows); either way its piece's job gets byte counts.
    worker.on('error', lost);
    worker.on('exit', lost);
    this.threads.push(thread);
    return thread;
  }

  /** Takes the thread out of the pool and terminates it. */
  private end(thread: Thread): void {
    const at = this.threads.indexOf(thread);
    if (at === -1) return;
    this.threads.splice(at, 1);
    if (thread.idleTimer) clearTimeout(thread.idleTimer);
    thread.piece = undefined;
    void thread.worker.terminate();
  }
}

/**
 * Token counts, off the event loop and bounded in time (`TokenPool`), with small jobs (at most
 * `SMALL_JOB_CHARS` in all: a short call's prompt or answer) on a thread of their own: they take turns
 * among themselves, never behind a piece of a long text, so a flood of long answers, however fair its
 * turns, does not delay a short call's count by a piece per job it counts. That thread starts with its
 * first small job (or `preload()`) and ends, with its copy of the tokenizer, after a while without any.
 */
export class TokenCounter {
  private readonly large: TokenPool;
  private readonly small: TokenPool;

  constructor(timeoutMs: number, options: TokenCounterOptions = {}) {
    this.large = new TokenPool(timeoutMs, options);
    this.small = new TokenPool(timeoutMs, { ...options, threads: 1 });
  }

  /**
   * Token counts of `texts`, exact when the tokenizer answers within the time bound. `owner` (the account
   * the texts are counted for) takes turns with the other owners.
   */
  count(texts: string[], owner = ''): Promise<TokenCount> {
    let chars = 0;
    for (const text of texts) chars += text.length;
    return (chars <= SMALL_JOB_CHARS ? this.small : this.large).count(texts, owner);
  }

  /** Starts the threads now, so the first counts do not wait for the tokenizer to load. */
  preload(): void {
    this.small.preload();
    this.large.preload();
  }

  /** Ends the threads; jobs still waiting or running get byte counts. */
  async close(): Promise<void> {
    await Promise.all([this.small.close(), this.large.close()]);
  }
}
