/**
 * Child processes: pinning with `taskset`, servers started until they print `{"url": …}` (output to a file:
 * a full pipe would throttle them), the load generator, the scripts' frame, clean-up on exit or Ctrl-C.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg as machineLoad } from 'node:os';
import { join, resolve } from 'node:path';
import ts from 'typescript';
import type { ClosedGenerator, Job, JobResult, LoadgenMessage } from './loadgen.js';
import { sleep } from './stats.js';
import { findWrk } from './wrk.js';

export const ROOT = resolve(import.meta.dirname, '..');
export const BIN = join(ROOT, 'bin', 'tollgate');
/** The node flags of `bin/tollgate`'s `#!` line: Tollgate is measured as `node <flags> bin/tollgate serve`. */
export function binNodeFlags(): string[] {
  const first = readFileSync(BIN, 'utf8').split('\n', 1)[0] ?? '';
  const match = first.match(/^#!\S*env -S node(?<flags>( --\S+)*)\s*$/);
  if (!match)
    throw new Error(`${BIN}: its first line is not \`#!/usr/bin/env -S node [flags]\` (got "${first}")`);
  return (match.groups?.flags ?? '').trim().split(' ').filter(Boolean);
}
export const SIMULATOR_MAIN = join(ROOT, 'dist', 'simulator', 'main.js');
/** Where the child-process scripts of the harness are transpiled to (plain `node`, no loader). */
export const BENCH_DIST = join(ROOT, 'dist', 'bench');

/** Which CPU each role runs on; `undefined` = not pinned. */
export interface Pinning {
  enabled: boolean;
  /** The measured process (gateway / proxy / simulator when it is the target). */
  target: string | undefined;
  /** Load generator, upstream simulator and the harness itself. */
  load: string | undefined;
  reason: string;
}

export function detectPinning(disabled = false): Pinning {
  if (disabled) return { enabled: false, target: undefined, load: undefined, reason: 'disabled (--no-pin)' };
  if (cpus().length < 2) {
    return { enabled: false, target: undefined, load: undefined, reason: 'fewer than 2 CPUs' };
  }
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' });
  } catch {
    return { enabled: false, target: undefined, load: undefined, reason: 'taskset not found' };
  }
  return {
    enabled: true,
    target: '0',
    load: '1',
    reason: 'target on CPU 0; load generator and upstream on CPU 1',
  };
}

/** Pins this very process (every thread) to `cpu`. */
export function pinSelf(cpu: string | undefined): void {
  if (cpu === undefined) return;
  try {
    execFileSync('taskset', ['-a', '-p', '-c', cpu, String(process.pid)], { stdio: 'ignore' });
  } catch {
    // not fatal: the numbers are just noisier
  }
}

function pinned(cpu: string | undefined, command: string, args: readonly string[]): [string, string[]] {
  return cpu === undefined ? [command, [...args]] : ['taskset', ['-c', cpu, command, ...args]];
}

// ── clean-up ─────────────────────────────────────────────────────────────────

const cleanups = new Set<() => Promise<void> | void>();

/** Registers a clean-up that runs on exit, Ctrl-C or a fatal error; returns its unregister function. */
export function onCleanup(fn: () => Promise<void> | void): () => void {
  cleanups.add(fn);
  return () => cleanups.delete(fn);
}

export async function cleanupAll(): Promise<void> {
  const all = [...cleanups].reverse();
  cleanups.clear();
  for (const fn of all) {
    try {
      await fn();
    } catch {
      // keep cleaning
    }
  }
}

// A crash of the harness must not leave servers running or databases behind.
for (const event of ['uncaughtException', 'unhandledRejection'] as const) {
  process.on(event, (err: unknown) => {
    process.stderr.write(`${event}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    cleanupAll().finally(() => process.exit(1));
  });
}

let signalledAt = 0;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    // Ctrl-C comes twice (the terminal's and tsx's relay): a signal well after the first skips the clean-up.
    if (signalledAt > 0) {
      if (Date.now() - signalledAt > 2_000) process.exit(130);
      return;
    }
    signalledAt = Date.now();
    process.stderr.write(`\n${signal}: stopping child processes and removing temporary files…\n`);
    cleanupAll().finally(() => process.exit(130));
  });
}

// ── servers ──────────────────────────────────────────────────────────────────

export interface RunningProcess {
  name: string;
  pid: number;
  child: ChildProcess;
  /** The `url` of the process's `{"url": …}` line, when it prints one. */
  url: string;
  logFile: string;
  output(): string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the process has exited. */
  stop(graceMs?: number): Promise<void>;
}

export interface SpawnOptions {
  name: string;
  command: string;
  args: readonly string[];
  env: Record<string, string>;
  cpu: string | undefined;
  /** Directory for the output file. */
  dir: string;
  /** For servers that print no URL: it is this, once `probe` accepts. */
  fixedUrl?: string;
  probe?: () => Promise<boolean>;
  timeoutMs?: number;
}

function exited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

function waitForExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (exited(child)) return Promise.resolve(true);
  return new Promise((resolvePromise) => {
    const timer = setTimeout(() => resolvePromise(false), ms);
    child.once('exit', () => {
      clearTimeout(timer);
      resolvePromise(true);
    });
  });
}

/** Starts a server process (pinned to `cpu`) and waits until it is ready. */
export async function startProcess(options: SpawnOptions): Promise<RunningProcess> {
  mkdirSync(options.dir, { recursive: true });
  const logFile = join(options.dir, `${options.name}-${process.hrtime.bigint()}.log`);
  const fd = openSync(logFile, 'w');
  const [command, args] = pinned(options.cpu, options.command, options.args);
  const child = spawn(command, args, { env: options.env, stdio: ['ignore', fd, fd], cwd: ROOT });
  closeSync(fd);
  const pid = child.pid;
  if (pid === undefined) throw new Error(`${options.name}: could not start ${command}`);
  const output = () => {
    try {
      return readFileSync(logFile, 'utf8');
    } catch {
      return '';
    }
  };
  const stop = async (graceMs = 10_000) => {
    unregister();
    if (exited(child)) return;
    child.kill('SIGTERM');
    if (!(await waitForExit(child, graceMs))) {
      child.kill('SIGKILL');
      await waitForExit(child, 5_000);
    }
  };
  const unregister = onCleanup(() => stop(2_000));

  const end = Date.now() + (options.timeoutMs ?? 30_000);
  const pattern = /"url"\s*:\s*"([^"]+)"/;
  for (;;) {
    if (options.fixedUrl !== undefined) {
      if (options.probe && (await options.probe().catch(() => false))) {
        return { name: options.name, pid, child, url: options.fixedUrl, logFile, output, stop };
      }
    } else {
      const match = output().match(pattern);
      if (match?.[1]) return { name: options.name, pid, child, url: match[1], logFile, output, stop };
    }
    if (exited(child)) {
      await stop();
      throw new Error(
        `${options.name} exited (${child.exitCode ?? child.signalCode}) before ready:\n${tail(output())}`,
      );
    }
    if (Date.now() > end) {
      await stop(1_000);
      throw new Error(`${options.name} not ready in ${options.timeoutMs ?? 30_000} ms:\n${tail(output())}`);
    }
    await sleep(25);
  }
}

/** The last lines of a process's output, for error messages. */
export function tail(text: string, lines = 15): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

/** The environment a child gets: PATH and HOME only, plus `extra` (config is read from env alone). */
export function baseEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
  if (process.env.HOME) env.HOME = process.env.HOME;
  return { ...env, ...extra };
}

// ── child scripts ────────────────────────────────────────────────────────────

/** The harness's own child-process scripts; they import nothing from `src/`. */
const CHILD_SCRIPTS = ['stats.ts', 'proc-stats.ts', 'raw-http.ts', 'wrk.ts', 'loadgen.ts', 'bare-proxy.ts'];

/** Transpiles the child-process scripts to `dist/bench/*.js`: plain `node`, no loader in what is measured. */
export function compileChildScripts(): void {
  mkdirSync(BENCH_DIST, { recursive: true });
  for (const file of CHILD_SCRIPTS) {
    const source = readFileSync(join(ROOT, 'bench', file), 'utf8');
    const out = ts.transpileModule(source, {
      fileName: file,
      compilerOptions: {
        module: ts.ModuleKind.ESNext,
        target: ts.ScriptTarget.ES2022,
        verbatimModuleSyntax: true,
      },
    });
    writeFileSync(join(BENCH_DIST, file.replace(/\.ts$/, '.js')), out.outputText);
  }
}

// ── load generator ───────────────────────────────────────────────────────────

/** The `--no-pin` flag, shared by the scripts that pin with `detectPinning`. */
export const NO_PIN_FLAG = { type: 'boolean', help: 'do not pin processes to CPUs with taskset' } as const;

/**
 * The closed loop's client at c50: wrk. Exits with a line naming the package when it is not on PATH (a
 * Node client costs several times wrk's CPU per request, on the CPU it shares with the upstream: the
 * figures would measure that CPU).
 */
export function requireWrk(): ClosedGenerator {
  const path = findWrk();
  if (path === undefined) {
    process.stderr.write('the benchmark needs wrk for its c50 closed loop (apt-get install wrk)\n');
    process.exit(2);
  }
  return { kind: 'wrk', path };
}

/** The load generator child process (pinned to the load CPU); runs one job at a time. */
export class LoadGen {
  private nextId = 1;
  private readonly waiting = new Map<
    number,
    { resolve: (r: JobResult) => void; reject: (e: Error) => void }
  >();
  private readonly unregister: () => void;

  private constructor(readonly child: ChildProcess) {
    child.on('message', (message: LoadgenMessage) => {
      const waiter = this.waiting.get(message.id);
      if (!waiter) return;
      this.waiting.delete(message.id);
      if ('error' in message) waiter.reject(new Error(`load generator: ${message.error}`));
      else waiter.resolve(message.result);
    });
    child.on('exit', (code, signal) => {
      for (const waiter of this.waiting.values()) {
        waiter.reject(new Error(`load generator exited (${code ?? signal})`));
      }
      this.waiting.clear();
    });
    this.unregister = onCleanup(() => this.close());
  }

  static start(cpu: string | undefined): LoadGen {
    const [command, args] = pinned(cpu, process.execPath, [join(BENCH_DIST, 'loadgen.js')]);
    // The IPC channel survives `taskset`, which execs node with the channel's fd and environment intact.
    const child = spawn(command, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], cwd: ROOT });
    return new LoadGen(child);
  }

  run<R extends JobResult>(job: Job): Promise<R> {
    const id = this.nextId++;
    return new Promise<R>((resolvePromise, reject) => {
      this.waiting.set(id, { resolve: resolvePromise as (r: JobResult) => void, reject });
      this.child.send({ id, job });
    });
  }

  async close(): Promise<void> {
    this.unregister();
    if (exited(this.child)) return;
    if (this.child.connected) this.child.disconnect();
    if (!(await waitForExit(this.child, 5_000))) this.child.kill('SIGKILL');
  }
}

// ── script frame ─────────────────────────────────────────────────────────────

export interface Script {
  pinning: Pinning;
  startedAt: Date;
  /** A progress line on stderr, with the seconds since the start. */
  log(line: string): void;
}

/**
 * Runs a bench script: pins this process to the load CPU, transpiles the child scripts, logs the machine,
 * runs `main`, and cleans up whatever it started, on success, failure or Ctrl-C.
 */
export function runScript(name: string, noPin: boolean, main: (script: Script) => Promise<void>): void {
  const startedAt = new Date();
  const log = (line: string) => {
    const t = ((Date.now() - startedAt.getTime()) / 1000).toFixed(0).padStart(4);
    process.stderr.write(`[${t}s] ${line}\n`);
  };
  const pinning = detectPinning(noPin);
  pinSelf(pinning.load);
  compileChildScripts();
  const load = (machineLoad() ?? []).map((n) => n.toFixed(2)).join(' ');
  log(`${cpus().length} CPUs, node ${process.version}, load average ${load}`);
  log(`pinning: ${pinning.enabled ? pinning.reason : `off (${pinning.reason})`}`);
  main({ pinning, startedAt, log })
    .catch((err: unknown) => {
      process.stderr.write(
        `${name} failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
      );
      process.exitCode = 1;
    })
    .finally(() => cleanupAll());
}
