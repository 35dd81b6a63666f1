import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

export const BIN = join(import.meta.dirname, '..', '..', 'bin', 'tollgate');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** What a child process printed, and its exit code, once it has ended. */
export function outputOf(child: ChildProcess): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr?.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Runs `bin/tollgate` to completion. Needs the project built (`npm run build`, part of `npm test`). */
export function runCli(args: string[], env: Record<string, string>, stdin?: string): Promise<CliResult> {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const output = outputOf(child);
  child.stdin.end(stdin ?? '');
  return output;
}

/** Starts a long-running `bin/tollgate` command and resolves once it printed a line matching `ready`. */
export function startCli(
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
  timeoutMs = 20_000,
  cwd?: string,
): Promise<{ child: ChildProcess; output: () => string; firstMatch: RegExpMatchArray }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      ...(cwd === undefined ? {} : { cwd }),
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`timed out waiting for ${ready}; output:\n${out}`));
    }, timeoutMs);
    const onData = (d: Buffer) => {
      out += d.toString();
      const match = out.match(ready);
      if (match) {
        clearTimeout(timer);
        resolve({ child, output: () => out, firstMatch: match });
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before ready; output:\n${out}`));
    });
  });
}

export function waitForExit(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => resolve(code));
  });
}
