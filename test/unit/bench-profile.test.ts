import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MODES } from '../../bench/profile/modes.js';

// `npm run bench:profile -- --mode M` loads the mode's module, which parses the whole command line itself,
// --mode included. --help stops a mode before it starts anything.

const ENTRY = join(import.meta.dirname, '..', '..', 'bench', 'profile.ts');

function profile(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const { BENCH_MODE: _, ...env } = process.env;
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', ENTRY, ...args],
      { env, timeout: 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? Number(err.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe.concurrent('npm run bench:profile', () => {
  it('--help lists the modes, then the default mode (cpu) and its flags', async () => {
    const r = await profile(['--help']);
    expect(r.code).toBe(0);
    for (const mode of Object.keys(MODES)) expect(r.stdout).toContain(`  ${mode} `);
    expect(r.stdout).toContain('usage: npm run bench:profile -- --mode cpu [options]');
    expect(r.stdout).toContain('--heap');
  });

  it('--mode instructions --help prints the flags of that mode', async () => {
    const r = await profile(['--mode', 'instructions', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('usage: npm run bench:profile -- --mode instructions [options]');
    expect(r.stdout).toContain('--functions');
  });

  it('refuses an unknown mode', async () => {
    const r = await profile(['--mode', 'flame']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--mode must be one of cpu, instructions, gc, perf (got flame)');
  });
});
