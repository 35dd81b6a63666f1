import { type ChildProcess, spawn } from 'node:child_process';
import { symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, type CliResult, outputOf, startCli } from '../helpers/cli.js';

/**
 * `bin/tollgate` run from a directory of the test's own, as an operator runs it from a checkout: relative
 * paths (`./data/demo.db`, `bin/tollgate` in a printed hint) resolve there. The directory gets a `bin`
 * link to the project's, so `bin/tollgate` works in it as printed.
 */
export function linkBin(cwd: string): void {
  symlinkSync(join(BIN, '..'), join(cwd, 'bin'));
}

/**
 * Runs `bin/tollgate` in `cwd` to completion, with only `env` (and PATH) in its environment. One still
 * running after `timeoutMs` (a server that started where it should have refused) is killed: its result
 * then has a null code, and the output it printed says what it was doing.
 */
export async function runIn(
  cwd: string,
  args: string[],
  env: Record<string, string>,
  stdin = '',
  timeoutMs = 20_000,
): Promise<CliResult & { ms: number }> {
  const started = Date.now();
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const output = outputOf(child);
  child.stdin.end(stdin);
  void exitWithin(child, timeoutMs);
  return { ...(await output), ms: Date.now() - started };
}

/** Runs a shell command line in `cwd`, exactly as printed for a user to paste. */
export function shellIn(cwd: string, line: string, env: Record<string, string>): Promise<CliResult> {
  return outputOf(
    spawn('sh', ['-c', line], {
      cwd,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
}

/** Starts a long-running `bin/tollgate` command in `cwd`; resolves once its output matches `ready`. */
export async function startIn(
  cwd: string,
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
  timeoutMs = 30_000,
): Promise<{ child: ChildProcess; output: () => string; match: RegExpMatchArray }> {
  const { child, output, firstMatch } = await startCli(args, env, ready, timeoutMs, cwd);
  return { child, output, match: firstMatch };
}

/** Waits for a child's exit for at most `ms`; kills it (SIGKILL) and resolves 'timeout' when it lingers. */
export function exitWithin(child: ChildProcess, ms: number): Promise<number | null | 'timeout'> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode);
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve('timeout');
    }, ms);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}
