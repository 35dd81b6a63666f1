import { execFileSync, spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { probeSpeed } from '../../bench/speed-probe.js';

// `npm run bench` runs this probe on the target's CPU around each target's phases and leaves out the
// comparisons of runs whose times moved (bench/report.ts, `sameSpeed`; checked in bench-report.test.ts).

function hasTaskset(): boolean {
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

describe('the speed probe', () => {
  it('times its fixed work in milliseconds, unpinned and pinned to a CPU', () => {
    const unpinned = probeSpeed(undefined);
    expect(unpinned).toBeGreaterThan(0.5);
    expect(unpinned).toBeLessThan(2_000);
    if (hasTaskset()) {
      const pinned = probeSpeed('0');
      expect(pinned).toBeGreaterThan(0.5);
      expect(pinned).toBeLessThan(2_000);
    }
  });

  it.skipIf(!hasTaskset())('fails loudly when it cannot be pinned', () => {
    // No machine here has CPU 4095: taskset refuses, and the probe throws instead of returning a figure.
    expect(() => probeSpeed('4095')).toThrow(/the speed probe failed on CPU 4095/);
  });

  it.skipIf(!hasTaskset())(
    'is timed by its own CPU time, so a process sharing its CPU does not lengthen it',
    async () => {
      const alone = probeSpeed('0');
      // A busy loop on the same CPU: timed by the clock, the probe took twice as long next to it.
      const busy = spawn(
        'taskset',
        ['-c', '0', process.execPath, '-e', 'for (const end = Date.now() + 3000; Date.now() < end; );'],
        {
          stdio: 'ignore',
        },
      );
      try {
        await new Promise((resolve) => setTimeout(resolve, 200));
        const shared = probeSpeed('0');
        expect(shared / alone).toBeLessThan(1.5);
      } finally {
        busy.kill();
      }
    },
  );
});
