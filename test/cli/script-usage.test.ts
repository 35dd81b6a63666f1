import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type CliResult, outputOf } from '../helpers/cli.js';

// The scripts beside bin/tollgate answer --help with their usage and a mistake with one line and the
// usage (exit 2), never with a stack trace.

const ROOT = join(import.meta.dirname, '..', '..');

function run(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return outputOf(child);
}

const CLUSTER = join(ROOT, 'scripts', 'cluster.mjs');
const CLUSTER_USAGE =
  'usage: node scripts/cluster.mjs [--instances N] [--port P] [--instance-ports P1,P2,…] [--dir DIR]\n' +
  '                                [--nginx PATH] [--simulator]\n';
const SIMULATOR = ['--import', 'tsx', join(ROOT, 'src', 'simulator', 'main.ts')];
const SIMULATOR_USAGE =
  'usage: simulator [--host H] [--port N] [--latency-ms N] [--stream-chunks N] ' +
  '[--stream-chunks-per-second X] [--reply-words N]\n';

describe('scripts/cluster.mjs', () => {
  it.each([['--help'], ['-h']])('%s prints the usage and every option, exit 0', async (flag) => {
    const r = await run([CLUSTER, flag]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout.startsWith(CLUSTER_USAGE)).toBe(true);
    for (const option of ['--instances', '--port', '--instance-ports', '--dir', '--nginx', '--simulator'])
      expect(r.stdout).toContain(`  ${option}`);
  });

  it.each([
    [['--instance', '2'], 'unknown option --instance'],
    [['--port'], '--port needs a value'],
    [['--port', '--instances', '2'], '--port needs a value'],
    [['--simulator=yes'], '--simulator takes no value'],
    [['--instances', 'two'], '--instances: "two" must be a whole number from 1 to 64'],
    [['--port', '99999'], '--port: "99999" must be a port, 0 to 65535'],
    [
      ['--instances', '2', '--instance-ports', '8081'],
      '--instance-ports must list 2 ports (one per instance), comma-separated',
    ],
    [['serve'], 'unexpected argument "serve"'],
  ])('%j: one line and the usage, exit 2, no stack trace', async (args, message) => {
    // A PostgreSQL URL, so nothing but the command line itself can be what is refused.
    const r = await run([CLUSTER, ...args], { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`cluster: ${message}\n${CLUSTER_USAGE}`);
  });
});

describe('the standalone simulator (src/simulator/main.ts)', () => {
  it('--help prints the usage and how to point a provider at it, exit 0', async () => {
    const r = await run([...SIMULATOR, '--help']);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout.startsWith(SIMULATOR_USAGE)).toBe(true);
    expect(r.stdout).toContain('PROV_DEEPSEEK_BASE_URL=<url>/openai/deepseek/v1');
  });

  it.each([
    [['--port'], '--port needs a value'],
    [['--port', '--host', 'x'], '--port needs a value'],
    [['--bogus', '1'], 'unknown option --bogus'],
    [['--latency-ms', 'soon'], '--latency-ms must be a non-negative integer'],
  ])('%j: one line and the usage, exit 2', async (args, message) => {
    const r = await run([...SIMULATOR, ...args]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`${message}\n${SIMULATOR_USAGE}`);
  });
});
