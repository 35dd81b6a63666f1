// `npm test`'s last step: runs vitest (extra arguments are passed on), then prints the closing summary
// (scripts/test-summary.mjs) whether or not a test failed, and exits with vitest's status, or with the
// summary's when vitest passed. A node script rather than shell, so it runs wherever npm does.
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const RESULTS = '.vitest-results.json';
// A summary must never be read from an earlier run's files.
rmSync(RESULTS, { force: true });
rmSync('.vitest-projects.json', { force: true });

const vitest = join(dirname(createRequire(import.meta.url).resolve('vitest/package.json')), 'vitest.mjs');
const run = (args) => {
  const { status, signal } = spawnSync(process.execPath, args, { stdio: 'inherit' });
  return status ?? (signal ? 1 : 0);
};
const tests = run([
  vitest,
  'run',
  '--reporter=default',
  '--reporter=json',
  '--reporter=./scripts/vitest-project-summary.mjs',
  `--outputFile.json=${RESULTS}`,
  ...process.argv.slice(2),
]);
const summary = run([join(import.meta.dirname, 'test-summary.mjs'), RESULTS]);
process.exit(tests !== 0 ? tests : summary);
