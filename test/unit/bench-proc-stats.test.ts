import { execFileSync, spawn } from 'node:child_process';
import { cpus } from 'node:os';
import { describe, expect, it } from 'vitest';
import { allowedCpus, busyShare, cpuTicks } from '../../bench/proc-stats.js';

describe("the benchmark's CPU figures from /proc (bench/proc-stats.ts)", () => {
  it('reads the CPUs a process may run on, as taskset set them', () => {
    const mine = allowedCpus();
    expect(mine?.length).toBeGreaterThan(0);
    for (const cpu of mine ?? []) expect(cpu).toBeLessThan(cpus().length);
    // A child pinned to CPU 0 reads [0]; the list syntax (ranges, commas) is parsed.
    const script = `import('${new URL('../../bench/proc-stats.ts', import.meta.url).pathname}').then((m) => console.log(JSON.stringify(m.allowedCpus())))`;
    const pinned = execFileSync('taskset', ['-c', '0', process.execPath, '--import', 'tsx', '-e', script], {
      encoding: 'utf8',
    });
    expect(JSON.parse(pinned)).toEqual([0]);
  });

  it('counts a CPU kept busy by a pinned process as busy', async () => {
    const before = cpuTicks([0]);
    expect(before?.total).toBeGreaterThan(0);
    const share = busyShare([0]);
    // 600 ms of a busy loop on CPU 0.
    const child = spawn('taskset', [
      '-c',
      '0',
      process.execPath,
      '-e',
      'const end = Date.now() + 600; while (Date.now() < end);',
    ]);
    await new Promise((resolve) => child.on('exit', resolve));
    const busy = share();
    expect(busy).toBeDefined();
    expect(busy as number).toBeGreaterThan(0.75);
    expect(busy as number).toBeLessThanOrEqual(1);
  });
});
